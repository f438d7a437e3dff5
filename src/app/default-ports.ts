import type { AccessControl } from "../core/access.js";
import { denyAllApprovals } from "../core/approvals.js";
import type { AuthorityPort } from "../core/identity.js";
import type { AppPorts } from "./base-parts.js";
import type { PortName } from "./feature.js";

/** Until the access feature installs real access control: the local console only. */
export const consoleOnlyAccess: AccessControl = {
  check: (message) =>
    message.channel === "console"
      ? { allow: true }
      : { allow: false, reason: "access control not configured" },
  allowsPress: (press) => press.channel === "console",
};

/** Until the access feature installs the real one: only the local console's user is an owner. */
export const consoleOnlyAuthority: AuthorityPort = {
  roleOf: (channel) => (channel === "console" ? "owner" : "guest"),
  mayDeliver: (current, target) =>
    target.channel === "console" ||
    (current !== null && current.channel === target.channel && current.chatId === target.chatId),
};

/** The ports the app itself provides (with a default): a feature may replace them, none has to. */
export const BUILT_IN_PORTS: readonly PortName[] = ["notifier", "access", "authority", "approvals"];

/** The ports before any feature contributes: console-only access and owner (or the test's), deny-all approvals. */
export function defaultPorts(options: { access?: AccessControl; authority?: AuthorityPort }): AppPorts {
  return {
    access: options.access ?? consoleOnlyAccess,
    approvals: denyAllApprovals,
    authority: options.authority ?? consoleOnlyAuthority,
    spend: null,
  };
}
