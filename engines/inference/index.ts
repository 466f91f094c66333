// Public surface of the local inference engine.
export { ModelPool, type ModelPoolOptions, type ModelListing, type PoolStats, type LoadedModelStats } from "./pool";
export { inferenceError, type InferenceErrorCode } from "./errors";
export { type ModelInfo } from "./info";
export { SERVER_SAMPLING_DEFAULTS, BUILTIN_SAMPLING_DEFAULTS, resolveSampling, samplingSources, type ResolvedSampling } from "./sampling";
export { rawDecodeBenchmark, rawCompletionBenchmark, rawParallelDecodeBenchmark, type RawDecodeResult, type RawParallelResult } from "./raw-bench";
export { writeTinyGguf, defaultModelPath, ensureTinyModel, DEFAULT_MODEL_FILE, type TinyModelSize } from "./gguf";
