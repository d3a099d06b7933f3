// The Gemini CLI's A2A server (@google/gemini-cli-a2a-server, from npm) as a real A2A server in
// toolnexus' tests (see ../field.py): its app on 127.0.0.1, a free port, its model the field's stub
// through GOOGLE_GEMINI_BASE_URL with a dummy GEMINI_API_KEY, its home and workspace a temporary
// folder. Usage: node server.mjs '{"model": MODEL_URL}'; prints its URL, serves until killed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const spec = JSON.parse(process.argv[2]);
const home = mkdtempSync(join(tmpdir(), 'gemini-peer-'));
Object.assign(process.env, {
  GEMINI_API_KEY: 'stub',
  GOOGLE_GEMINI_BASE_URL: spec.model,
  HOME: home,
  CODER_AGENT_WORKSPACE_PATH: home,
  GEMINI_FOLDER_TRUST: 'true',
});
const { createApp, updateCoderAgentCardUrl } = await import(
  '@google/gemini-cli-a2a-server/dist/src/http/app.js'
);
const app = await createApp();
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  updateCoderAgentCardUrl(port);
  console.log(`http://127.0.0.1:${port}`);
});
