import { ApiError, notFound, validationFailed } from '../../http/api-error.ts';
import type { ModelPriceBody } from '../../generated/management/model-price.ts';
import type { ModelPriceSyncBody } from '../../generated/management/model-price-sync.ts';
import type { PriceList } from '../../generated/management/price-list.ts';
import type { ManagementContext, ManagementDeps } from '../context.ts';
import { fetchJson } from '../fetch-json.ts';
import { queryEnum, queryString, stringParam } from '../params.ts';
import { parsePriceList, type PriceCatalogEntry } from '../price-catalog.ts';
import { route, type RouteDef } from '../route-def.ts';
import priceSchema from '../schemas/model-price.json' with { type: 'json' };
import priceListSchema from '../schemas/price-list.json' with { type: 'json' };
import syncSchema from '../schemas/model-price-sync.json' with { type: 'json' };

export function modelPriceRoutes(deps: ManagementDeps): RouteDef[] {
  const { store } = deps;
  const validatePriceList = deps.validator.compile<PriceList>(priceListSchema);
  const remotePriceList = (value: unknown, url: string): PriceCatalogEntry[] => {
    try {
      return parsePriceList(value, validatePriceList);
    } catch (err) {
      if (err instanceof ApiError) throw new ApiError('BAD_GATEWAY', { data: { reason: 'remote_invalid', url, problem: err.data } });
      throw err;
    }
  };
  const catalogPrice = (model: string) => deps.priceCatalog.find((e) => e.model === model);

  return [
    route({
      method: 'GET',
      path: '/model-prices',
      query: ['model', 'source'],
      async handle(ctx) {
        const model = queryString(ctx, 'model');
        const source = queryEnum(ctx, 'source', ['catalog', 'sync', 'manual'] as const);
        const list = (await store.modelPrices.list()).filter((p) => (model === undefined || p.model.includes(model)) && (source === undefined || p.source === source));
        return { data: list.map((p) => ({ ...p, in_catalog: catalogPrice(p.model) !== undefined })) };
      },
    }),
    route<ModelPriceBody>({
      method: 'PUT',
      path: '/model-prices/:model',
      body: priceSchema,
      async handle(ctx, body) {
        return { data: await store.modelPrices.put(priceModel(ctx), body, 'manual') };
      },
    }),
    route({
      method: 'POST',
      path: '/model-prices/:model/reset',
      async handle(ctx) {
        const model = stringParam(ctx, 'model');
        const entry = catalogPrice(model);
        if (!entry) throw notFound('catalog_price', model);
        return { data: await store.modelPrices.put(model, entry.price, 'catalog') };
      },
    }),
    route({
      method: 'DELETE',
      path: '/model-prices/:model',
      async handle(ctx) {
        const model = stringParam(ctx, 'model');
        if (!(await store.modelPrices.delete(model))) throw notFound('model_price', model);
        return {};
      },
    }),
    route<ModelPriceSyncBody>({
      method: 'POST',
      path: '/model-prices/sync',
      body: syncSchema,
      async handle(_ctx, body) {
        const source = body.source ?? (body.url === undefined ? 'catalog' : 'url');
        let entries: readonly PriceCatalogEntry[] = deps.priceCatalog;
        let from = 'catalog';
        if (source === 'url') {
          const url = body.url ?? (await store.settings.get()).model_price_sync_url;
          if (!url) throw new ApiError('VALIDATION_FAILED', { data: { field: 'url', reason: 'required', hint: 'or set model_price_sync_url in settings' } });
          entries = remotePriceList(await fetchJson(deps.fetch, url), url);
          from = url;
        }
        // Prices set by hand stay until reset or deleted; a sync never overwrites them.
        const manual = new Set((await store.modelPrices.list()).filter((p) => p.source === 'manual').map((p) => p.model));
        const applicable = entries.filter((e) => !manual.has(e.model));
        const counts = await store.modelPrices.putMany(applicable, source === 'url' ? 'sync' : 'catalog');
        return { data: { source: from, ...counts, kept_manual: entries.length - applicable.length } };
      },
    }),
  ];
}

/** A price is for a model name a Group can hold (`models[].upstream`: 1 to 300 characters). */
const MAX_MODEL_LENGTH = 300;

function priceModel(ctx: ManagementContext): string {
  const model = stringParam(ctx, 'model');
  if (model.trim() === '' || model.length > MAX_MODEL_LENGTH) throw validationFailed('model', 'invalid_value', { max_length: MAX_MODEL_LENGTH });
  return model;
}
