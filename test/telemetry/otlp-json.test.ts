// Gateway traces exported over OTLP http/json (gateway-traces.ts).
import { gatewayTraces } from "./gateway-traces";

gatewayTraces("http/json");
