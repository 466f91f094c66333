export { writeTinyGguf, defaultModelPath, ensureTinyModel, DEFAULT_MODEL_FILE, TINY_MODEL_SHAPES, type TinyModelSize } from "./tiny-model";
