export { createServer, type DataPlaneMount, type DataPlaneMountDeps, type RunningServer, type ServerOptions } from './create-server.ts';
export { AUTH_KEY_FILE, loadAuthKey } from './auth-key.ts';
