import { ToolError } from "../core/tool-error.js";

/**
 * A call refused by a security rule (file guard Deny, SSRF, git argument, shell policy). The code is the rule ID;
 * the registry records the call's audit verdict as "deny".
 */
export class GuardRefusal extends ToolError {
  readonly verdict = "deny" as const;

  constructor(ruleId: string, message: string) {
    super(ruleId, message);
    this.name = "GuardRefusal";
  }
}
