// Placeholder: the gateway engine (keys, policy, limits, audit, webhooks, routing) is built here.
import type { Svc } from "../svc";
import type { Controller } from "../../controllers/types";
import type { InferencePipeline } from "./pipeline-types";

export interface Gateway {
  pipeline: InferencePipeline;
  /** controllers for ApiKey, AccessPolicy, Provider, AlertSettings */
  controllers: Controller[];
  /** flush audit/usage batches, stop webhook delivery */
  close(): Promise<void>;
}

export async function createGateway(_svc: Svc): Promise<Gateway> {
  throw new Error("gateway not built yet");
}
