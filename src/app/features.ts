import { accessFeature } from "./access-feature.js";
import { browserFeature } from "./browser-feature.js";
import { dashboardFeature } from "./dashboard-feature.js";
import { deliveryFailoverFeature } from "./delivery-failover-feature.js";
import type { MagpieFeature } from "./feature.js";
import { hardwareFeature } from "./hardware-feature.js";
import { livenessFeature } from "./liveness-feature.js";
import { mcpFeature } from "./mcp-feature.js";
import { memoryFeature } from "./memory-feature.js";
import { metricsFeature } from "./metrics-feature.js";
import { retentionFeature } from "./retention-feature.js";
import { schedulerFeature } from "./scheduler-feature.js";
import { securityFeature } from "./security-feature.js";
import { traceFeature } from "./trace-feature.js";
import { triggersFeature } from "./triggers-feature.js";
import { undeliverableFeature } from "./undeliverable-feature.js";
import { usageFeature } from "./usage-feature.js";
import { voiceFeature } from "./voice-feature.js";

/** Every feature, set up in this order. Each feature adds one line here. */
export const features: MagpieFeature[] = [
  accessFeature,
  securityFeature,
  memoryFeature,
  schedulerFeature,
  usageFeature,
  traceFeature,
  undeliverableFeature,
  deliveryFailoverFeature,
  livenessFeature,
  retentionFeature,
  hardwareFeature,
  triggersFeature,
  mcpFeature,
  browserFeature,
  dashboardFeature,
  metricsFeature,
  voiceFeature,
];
