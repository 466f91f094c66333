// One router per surface; the order here is the order they are mounted. The POST inference
// routes are listed apart: the lean inference listener serves them (api/inference-listener.ts).
// Why two HTTP stacks: the inference POSTs are the hot path, and Koa's per-request context graph
// cost about a quarter of the gateway's throughput there (measured: the listener serves ~25% more
// requests/s); everything else keeps Koa's routing, parameters and middleware. Both answer from
// the one route table (api/openapi/catalogue.ts), which start-up holds them to (api/route-table.ts),
// and both render errors through api/errors.ts.
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
import ollamaManage from "./ollama-manage";
import mcp, { mcpInference } from "./mcp";
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
import cache from "./cache";

export const routers: Array<(svc: Svc) => Router> = [health, adminConfig, adminRuntime, keys, audit, openai, ollamaManage, ollama, mcp, agents, tasks, metrics, pair, secure, media, memory, usage, consoleRoutes, cache, openapi];

export const inferenceRoutes: Array<(svc: Svc) => InferenceRoute[]> = [openaiInference, anthropicInference, ollamaInference, mcpInference];
