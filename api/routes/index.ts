// One router per surface; the order here is the order they are mounted.
import type Router from "@koa/router";
import type { Svc } from "../../engines/svc";
import health from "./health";
import adminConfig from "./admin-config";
import adminRuntime from "./admin-runtime";
import keys from "./keys";
import audit from "./audit";
import openai from "./openai";
import anthropic from "./anthropic";
import ollama from "./ollama";

export const routers: Array<(svc: Svc) => Router> = [health, adminConfig, adminRuntime, keys, audit, openai, anthropic, ollama];
