// What the model pool needs from node-llama-cpp, in one module the pool imports when it first
// loads a model (engines/inference/pool.ts): a server that never loads a local model (a
// gateway-only deployment, the CLI) never loads node-llama-cpp.
export { getLlama, LlamaLogLevel } from "node-llama-cpp";
export { generate, prepare, promptTokenCount } from "./chat-run";
export { readModelInfo } from "./info";
export { GrammarCache } from "./json-schema";
export { LoadedModel } from "./loaded-model";
