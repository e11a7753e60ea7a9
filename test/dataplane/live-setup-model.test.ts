import t from 'tap';
import { withSetupModel } from '../../src/dataplane/live-setup-model.ts';

const setup = (model: string) => Buffer.from(JSON.stringify({ setup: { model } }));
const modelOf = (message: Buffer | undefined) => (message === undefined ? undefined : (JSON.parse(message.toString()) as { setup: { model: string } }).setup.model);

t.test('an upstream model given as a resource name (models/x) names the model once in the setup, whatever path the client wrote', async (t) => {
  t.equal(modelOf(withSetupModel(setup('models/live-voice'), 'models/gemini-live-up')), 'models/gemini-live-up');
  t.equal(modelOf(withSetupModel(setup('publishers/google/models/live-voice'), 'models/gemini-live-up')), 'publishers/google/models/gemini-live-up');
  t.equal(modelOf(withSetupModel(setup('live-voice'), 'models/gemini-live-up')), 'models/gemini-live-up');
  t.equal(modelOf(withSetupModel(setup('models/live-voice'), 'gemini-live-up')), 'models/gemini-live-up', 'a bare upstream name as before');
  t.equal(modelOf(withSetupModel(setup('models/live-voice'), 'tunedModels/t1')), 'tunedModels/t1', 'a tuned model is named whole, not under models/');
});
