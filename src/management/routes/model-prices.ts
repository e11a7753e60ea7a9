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
import groupModelsSchema from '../schemas/group-models.json' with { type: 'json' };

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
        // Prices set by hand stay until reset or deleted; a sync never overwrites them (putMany keeps them).
        const counts = await store.modelPrices.putMany(entries, source === 'url' ? 'sync' : 'catalog');
        return { data: { source: from, ...counts } };
      },
    }),
  ];
}

/** A price is for a model name a Group can hold (`models[].upstream`), by the Group schema's own rule. */
const GROUP_MODEL = groupModelsSchema.properties.models.items.properties.upstream;
/** As ajv applies the schema's pattern (Unicode mode, so only a lone surrogate is one). */
const GROUP_MODEL_PATTERN = new RegExp(GROUP_MODEL.pattern, 'u');

function priceModel(ctx: ManagementContext): string {
  const model = stringParam(ctx, 'model');
  // Characters as ajv's maxLength counts them, code points: a name of 300 emoji is one a Group holds.
  const length = [...model].length;
  // As the schema validator names the rule a value broke; `blank` is this route's own (spaces
  // alone, which the Group pattern lets through, are no vendor's model name).
  if (model.trim() === '') throw validationFailed('model', 'invalid_value', { rule: 'blank' });
  if (length > GROUP_MODEL.maxLength) throw validationFailed('model', 'invalid_value', { rule: 'maxLength', max_length: GROUP_MODEL.maxLength });
  if (!GROUP_MODEL_PATTERN.test(model)) throw validationFailed('model', 'invalid_value', { rule: 'pattern' });
  return model;
}
