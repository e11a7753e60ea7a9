/**
 * Google's model collections. Google lists a model by its resource name (`models/gemini-2.0-flash`,
 * as the OpenAI-compatible endpoint of the same key lists its id too), so a Group's upstream model
 * may be given that way; a tuned model is only ever `tunedModels/{id}`.
 */
const COLLECTIONS = ['models/', 'tunedModels/'] as const;

/** An upstream model given as a Google resource name, split into its collection (`models/`) and id; undefined for a bare name. */
export function googleModelResource(upstreamModel: string): { collection: string; id: string } | undefined {
  const collection = COLLECTIONS.find((c) => upstreamModel.startsWith(c) && upstreamModel.length > c.length);
  return collection === undefined ? undefined : { collection, id: upstreamModel.slice(collection.length) };
}
