// One router per surface; the order here is the order they are mounted. The POST inference
// routes are listed apart: the lean inference listener serves them (api/inference-listener.ts).
import type Router from "@koa/router";
import type { Svc } from "../../engines/svc";
import type { InferenceRoute } from "../inference-route";
import health from "./health";
import adminConfig from "./admin-config";
import adminRuntime from "./admin-runtime";
import keys from "./keys";
import audit from "./audit";
import openai, { openaiInference } from "./openai";
import { anthropicInference } from "./anthropic";
import ollama, { ollamaInference } from "./ollama";
import mcp from "./mcp";
import agents from "./agents";
import tasks from "./tasks";
import metrics from "./metrics";
import pair from "./pair";
import secure from "./secure";
import media from "./media";

import memory from "./memory";
import openapi from "./openapi";
import usage from "./usage";
import consoleRoutes from "./console";

export const routers: Array<(svc: Svc) => Router> = [health, adminConfig, adminRuntime, keys, audit, openai, ollama, mcp, agents, tasks, metrics, pair, secure, media, memory, usage, consoleRoutes, openapi];

export const inferenceRoutes: Array<(svc: Svc) => InferenceRoute[]> = [openaiInference, anthropicInference, ollamaInference];
