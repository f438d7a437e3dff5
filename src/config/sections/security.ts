import { z } from "zod";
import { positiveInt } from "./common.js";

export const securitySchema = z
  .strictObject({
    level: z.enum(["low", "medium", "high"]).default("medium"),
    approvals: z
      .strictObject({
        /** Tool names, "risk:high", "risk:medium" or "guard:warn". */
        require: z.array(z.string().min(1)).default([]),
        timeoutSecs: positiveInt.default(300),
      })
      .prefault({}),
  })
  .prefault({});

export type SecurityConfig = z.infer<typeof securitySchema>;
