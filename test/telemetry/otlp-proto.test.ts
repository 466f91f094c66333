// Gateway traces exported over OTLP http/protobuf (gateway-traces.ts).
import { gatewayTraces } from "./gateway-traces";

gatewayTraces("http/protobuf");
