// Which llama.cpp backend runs local models: SVC_GPU. Unset or "off" is the CPU build, the one a
// plain `npm ci` installs. "auto", "cuda", "vulkan" or "metal" need node-llama-cpp's GPU builds,
// which the lockfile leaves out (they are ~610 MB on linux-x64; `npm run gpu` adds them). A
// backend that cannot start (no GPU build installed, no GPU, no driver) falls back to the CPU,
// with a message saying why, so that the same configuration serves on every machine.
import type { Llama } from "node-llama-cpp";
import { inferenceError } from "./errors";

export type GpuChoice = false | "auto" | "cuda" | "vulkan" | "metal";

const CHOICES: Record<string, GpuChoice> = { "": false, off: false, false: false, cpu: false, auto: "auto", cuda: "cuda", vulkan: "vulkan", metal: "metal" };

/** SVC_GPU's value as node-llama-cpp's `gpu` option; a bad value is an error naming the good ones. */
export function gpuChoice(value: string | undefined): GpuChoice {
  const v = (value ?? "").trim().toLowerCase();
  if (v in CHOICES) return CHOICES[v];
  throw inferenceError("model_unavailable", `SVC_GPU=${value} is not one of off, auto, cuda, vulkan, metal`);
}

type GetLlama = (opts: { gpu: GpuChoice; build?: "never" }) => Promise<Llama>;

/** Start llama.cpp on the chosen backend, or on the CPU when that backend cannot start. */
export async function startLlama(getLlama: GetLlama, choice: GpuChoice, log: (msg: string) => void): Promise<Llama> {
  if (choice === false) return getLlama({ gpu: false });
  // build "never": a missing GPU binary is a fallback to the CPU, never a download or a compile
  let llama: Llama;
  try {
    llama = await getLlama({ gpu: choice, build: "never" });
  } catch (e: any) {
    const why = String(e?.message || e?.name || e).split("\n")[0];
    log(`SVC_GPU=${choice}: the ${choice} backend cannot start (${why}); running local models on the CPU. GPU builds are installed by \`npm run gpu\``);
    return getLlama({ gpu: false });
  }
  if (llama.gpu === false) log(`SVC_GPU=${choice}: no usable GPU found; running local models on the CPU`);
  else log(`running local models on the GPU (${llama.gpu})`);
  return llama;
}
