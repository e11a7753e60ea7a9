import type { Middleware, ParameterizedContext } from 'koa';

/** Runs middleware in order as one; the last one's `next` resolves without going further. */
export function runChain(middleware: readonly Middleware[]): (ctx: ParameterizedContext) => Promise<void> {
  return (ctx) => {
    const dispatch = async (i: number): Promise<void> => {
      const mw = middleware[i];
      if (mw) await mw(ctx, () => dispatch(i + 1));
    };
    return dispatch(0);
  };
}
