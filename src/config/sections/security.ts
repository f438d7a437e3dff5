import { z } from "zod";
import { positiveInt } from "./common.js";

export const securitySchema = z
  .strictObject({
    level: z.enum(["low", "medium", "high"]).default("medium"),
    approvals: z
      .strictObject({
        /** Tool names, "risk:high", "risk:medium" or "guard:warn". */
        require: z.array(z.string().min(1)).default(["guard:warn"]),
        timeoutSecs: positiveInt.default(300),
      })
      .prefault({}),
    /** Tools a guest's turn may use (default none); routes and agent tool sets can't widen it. */
    guestToolSet: z.array(z.string().min(1)).default([]),
    ssrf: z
      .strictObject({
        /** Private hosts or CIDRs the owner wants reachable (a home server on the LAN); logged at start-up. */
        allowHosts: z.array(z.string().min(1)).default([]),
      })
      .prefault({}),
    /**
     * Folders the owner vouches for (DESIGN.md → Security → "Untrusted content"): reading a file under them doesn't
     * make a turn hold untrusted content, whoever wrote it. Relative entries count from the workspace.
     */
    trustedPaths: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

export type SecurityConfig = z.infer<typeof securitySchema>;
