import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import {
  type TriggerConfig,
  type TriggersConfig,
  triggerActionSchema,
  triggerSourceSchema,
} from "../config/sections/triggers.js";
import { type AuthorityPort, ownerIdentity, type SenderIdentity } from "../core/identity.js";
import type { ReplyTarget } from "../core/types.js";
import { ConfigError } from "../lib/errors.js";
import { deliverRuleText } from "../scheduler/action-runner.js";
import type { JobCreator } from "../scheduler/job.js";
import type { KvRepository } from "../store/kv.js";
import { sourceOf } from "./sources/index.js";
import { actionKind, type TriggerCounts, type TriggerDefinition } from "./trigger.js";
import { creationRefusal } from "./trigger-authority.js";
import { TriggerError } from "./trigger-error.js";
import type { TriggerRuntime } from "./trigger-runtime.js";

const CHAT_TRIGGERS_KEY = "triggers.chat";
/** Chat-made triggers kept at most (each one may hold a broker subscription or a timer). */
const MAX_CHAT_TRIGGERS = 100;

const chatSchema = z.object({
  channel: z.string().min(1),
  chatId: z.string().min(1),
  threadId: z.string().min(1).optional(),
});

/** A trigger made in chat as kept in kv: checked when read back, so a damaged row can't pass as a trigger. */
const storedTriggerSchema = z.object({
  name: z.string().min(1),
  on: triggerSourceSchema,
  when: z.string().min(1).optional(),
  do: triggerActionSchema,
  deliver: z.object({ chat: chatSchema.optional(), pushover: z.boolean(), ntfy: z.boolean().optional() }),
  cooldownSecs: z.number().int().min(0),
  maxPerHour: z.number().int().min(1),
  enabled: z.boolean(),
  source: z.literal("chat"),
  creator: z.object({
    identity: z.object({
      channel: z.string().min(1),
      userId: z.string().min(1),
      userName: z.string().optional(),
      role: z.enum(["owner", "guest"]),
    }),
    agent: z.string().min(1).optional(),
    toolNames: z.array(z.string()).optional(),
  }),
  createdFrom: chatSchema.optional(),
});

/** A trigger as the tools and `/triggers` show it (the webhook secret never shown). */
export interface TriggerView {
  name: string;
  source: "config" | "chat";
  on: string;
  when: string | null;
  do: string;
  deliver: string;
  enabled: boolean;
  cooldownSecs: number;
  maxPerHour: number;
  createdBy: string;
  counts: TriggerCounts;
}

/** Who makes a trigger in chat and from where (the creating turn). */
export interface TriggerOrigin {
  creator: JobCreator;
  /** The chat it is made in (default report chat, where approvals go); null outside a chat. */
  createdFrom: ReplyTarget | null;
}

/** A config trigger as it runs: the owners'. */
export function configTrigger(name: string, trigger: TriggerConfig): TriggerDefinition {
  const { deliver } = trigger;
  return {
    name,
    on: trigger.on,
    ...(trigger.when !== undefined ? { when: trigger.when } : {}),
    do: trigger.do,
    deliver: {
      ...(deliver?.channel && deliver.chat_id
        ? { chat: { channel: deliver.channel, chatId: deliver.chat_id } }
        : {}),
      pushover: deliver?.pushover ?? false,
      ntfy: deliver?.ntfy ?? false,
    },
    cooldownSecs: trigger.cooldownSecs,
    maxPerHour: trigger.maxPerHour,
    enabled: trigger.enabled,
    source: "config",
    creator: { identity: ownerIdentity("local") },
  };
}

/**
 * Triggers from the config and from chat (kept in kv), with the jobs' authority rules (DESIGN.md → Security →
 * "Jobs carry their creator's authority"): guests make none, a command needs `shell` among the creator's tools,
 * a deliver chat must pass the `message` rule. The runtime (predicates, MQTT) is loaded on first need.
 */
export class TriggerService {
  private runtime: TriggerRuntime | null = null;
  private loading: Promise<TriggerRuntime> | null = null;

  constructor(
    private readonly deps: {
      /** `triggers` from the config, read at each use (a reload replaces it). */
      config: () => TriggersConfig;
      /** The triggers `hardware.watch` becomes (src/triggers/watch-triggers.ts); none without boards. */
      watches?: () => TriggerDefinition[];
      kv: KvRepository;
      authority: () => AuthorityPort;
      /** Builds the runtime (lazy import) — with every config and stored trigger put, or throws a ConfigError. */
      load: (definitions: TriggerDefinition[]) => Promise<TriggerRuntime>;
    },
  ) {}

  /** Every trigger definition: config ones first (`triggers`, then `hardware.watch`), then chat ones. */
  definitions(): TriggerDefinition[] {
    return [...this.fromConfig(), ...this.stored()];
  }

  /** True when there is anything to run (then start-up loads the runtime). */
  hasTriggers(): boolean {
    return this.fromConfig().length > 0 || this.stored().length > 0;
  }

  /** The owner's triggers: the config's `triggers` and the pins `hardware.watch` watches. */
  private fromConfig(): TriggerDefinition[] {
    const triggers = Object.entries(this.deps.config()).map(([name, trigger]) =>
      configTrigger(name, trigger),
    );
    return [...triggers, ...(this.deps.watches?.() ?? [])];
  }

  /** The runtime, loading it on first use. */
  async ready(): Promise<TriggerRuntime> {
    if (this.runtime) return this.runtime;
    this.loading ??= this.deps.load(this.definitions()).then(
      (runtime) => {
        this.runtime = runtime;
        return runtime;
      },
      (error: unknown) => {
        // A config the runtime refused (a bad `when`) is not remembered: the next reload or tool call tries again.
        this.loading = null;
        throw error;
      },
    );
    return this.loading;
  }

  /** The runtime if it is loaded (webhooks and `/triggers` never load it for nothing). */
  loaded(): TriggerRuntime | null {
    return this.runtime;
  }

  /** Makes a trigger from chat (trigger_add). */
  async add(trigger: TriggerConfig & { name: string }, origin: TriggerOrigin): Promise<TriggerView> {
    const refusal = creationRefusal({ ...configTrigger(trigger.name, trigger), creator: origin.creator });
    if (refusal) throw new TriggerError(refusal.code, `Refused: ${refusal.message}; nothing was made.`);
    if (this.deps.config()[trigger.name])
      throw new TriggerError(
        "trigger.exists",
        `Trigger "${trigger.name}" is in the config file; change it there. Nothing was made.`,
      );
    const stored = this.stored();
    const others = stored.filter((entry) => entry.name !== trigger.name);
    if (others.length >= MAX_CHAT_TRIGGERS)
      throw new TriggerError(
        "trigger.too_many",
        `There are already ${MAX_CHAT_TRIGGERS} triggers made in chat; remove one first.`,
      );
    const chat = deliverChat(trigger, origin.createdFrom);
    if (chat && !this.deps.authority().mayDeliver(origin.createdFrom, chat))
      throw new TriggerError(
        "trigger.deliver_not_allowed",
        `chat ${chat.chatId} on ${chat.channel} is not one Magpie may post to: ${deliverRuleText(chat)}; nothing was made.`,
      );
    const definition: TriggerDefinition = {
      ...configTrigger(trigger.name, trigger),
      deliver: {
        ...(chat ? { chat } : {}),
        pushover: trigger.deliver?.pushover ?? false,
        ntfy: trigger.deliver?.ntfy ?? false,
      },
      source: "chat",
      creator: origin.creator,
      ...(origin.createdFrom ? { createdFrom: origin.createdFrom } : {}),
    };
    if (!definition.deliver.chat && !definition.deliver.pushover && !definition.deliver.ntfy)
      throw new TriggerError(
        "trigger.no_target",
        "Say where it reports: deliver.channel + deliver.chat_id, pushover: true or ntfy: true.",
      );
    const runtime = await this.ready();
    const problems = runtime.problems(definition);
    if (problems.length > 0)
      throw new TriggerError("trigger.invalid", `${problems.join("; ")}. Nothing was made.`);
    await runtime.put(definition);
    this.deps.kv.set(CHAT_TRIGGERS_KEY, [...others, definition]);
    return this.view(definition, runtime);
  }

  /** Removes a chat-made trigger (config ones are changed in the file). */
  async remove(name: string, by: SenderIdentity): Promise<boolean> {
    if (by.role === "guest")
      throw new TriggerError(
        "trigger.guest_not_allowed",
        "Only an owner can remove triggers; nothing was removed.",
      );
    // `hardware.watch.<pin>` is the file's too (its hardware.watch entries).
    if (this.fromConfig().some((definition) => definition.name === name))
      throw new TriggerError("trigger.config", `Trigger "${name}" is in the config file; remove it there.`);
    const stored = this.stored();
    const kept = stored.filter((entry) => entry.name !== name);
    if (kept.length === stored.length) return false;
    this.deps.kv.set(CHAT_TRIGGERS_KEY, kept);
    this.runtime?.remove(name);
    return true;
  }

  /**
   * Takes over a reloaded `triggers` section (and `mqtt` settings): every new or changed config trigger is checked
   * first — one problem (a bad `when`, an unknown pin, no broker) throws a ConfigError and changes no trigger — then
   * removed ones stop, new and changed ones (re)start, unchanged ones keep running with their counts, cooldowns and
   * subscriptions. Triggers made in chat are untouched. A config trigger may not take a chat trigger's name.
   */
  async reload(options: {
    mqttChanged: boolean;
  }): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    const result: { added: string[]; changed: string[]; removed: string[] } = {
      added: [],
      changed: [],
      removed: [],
    };
    const wanted = this.fromConfig();
    const chatNames = new Set(this.stored().map((definition) => definition.name));
    const taken = wanted.filter((definition) => chatNames.has(definition.name));
    if (taken.length > 0)
      throw new ConfigError(
        taken.map(
          ({ name }) =>
            `triggers.${name}: a trigger made in chat already has this name — rename it in the file, or remove the chat one (trigger_remove ${name}).`,
        ),
      );
    const runtime = this.runtime;
    if (!runtime) {
      // Nothing ran yet: the first trigger in the file loads the runtime (which checks every definition).
      if (wanted.length > 0) {
        await this.ready();
        result.added.push(...wanted.map((definition) => definition.name));
      }
      return result;
    }
    const running = new Map(
      runtime
        .list()
        .filter(({ definition }) => definition.source === "config")
        .map(({ definition }) => [definition.name, definition]),
    );
    const changed = wanted.filter((definition) => {
      const current = running.get(definition.name);
      return !current || !isDeepStrictEqual(current, definition);
    });
    const problems = changed.flatMap((definition) => runtime.problems(definition));
    if (problems.length > 0) throw new ConfigError(problems);
    const names = new Set(wanted.map((definition) => definition.name));
    for (const name of running.keys()) {
      if (names.has(name)) continue;
      runtime.remove(name);
      result.removed.push(name);
    }
    if (options.mqttChanged) {
      // New broker settings: every connection is closed and every MQTT trigger subscribes again on the new one.
      await runtime.mqtt.close();
      const changedNames = new Set(changed.map((definition) => definition.name));
      for (const { definition } of runtime.list()) {
        if (!sourceOf(definition.on).usesBroker || changedNames.has(definition.name)) continue;
        await runtime.put(definition);
      }
    }
    for (const definition of changed) {
      await runtime.put(definition);
      (running.has(definition.name) ? result.changed : result.added).push(definition.name);
    }
    return result;
  }

  /** Every trigger with its counts (zero when the runtime never loaded). */
  list(): TriggerView[] {
    const runtime = this.runtime;
    if (runtime) return runtime.list().map(({ definition }) => this.view(definition, runtime));
    return this.definitions().map((definition) => this.view(definition, null));
  }

  private view(definition: TriggerDefinition, runtime: TriggerRuntime | null): TriggerView {
    const counts = runtime?.list().find((entry) => entry.definition.name === definition.name)?.counts ?? {
      fired: 0,
      filtered: 0,
      errors: 0,
      dropped: 0,
    };
    const source = sourceOf(definition.on);
    const chat = definition.deliver.chat;
    const targets =
      "watch" in definition.do
        ? definition.do.watch.targets.flatMap((target) => [
            ...(target.chat
              ? [`${target.chat.channel}:${target.chat.chatId}${target.prompt ? " (turn)" : ""}`]
              : []),
            ...(target.pushover ? ["pushover"] : []),
          ])
        : [];
    return {
      name: definition.name,
      source: definition.source,
      on: `${source.key} ${source.describe(definition)}`,
      when: definition.when ?? null,
      do: actionKind(definition.do),
      deliver: [
        ...targets,
        chat ? `${chat.channel}:${chat.chatId}` : "",
        definition.deliver.pushover ? "pushover" : "",
        definition.deliver.ntfy ? "ntfy" : "",
      ]
        .filter(Boolean)
        .join(" + "),
      enabled: definition.enabled,
      cooldownSecs: definition.cooldownSecs,
      maxPerHour: definition.maxPerHour,
      createdBy: `${definition.creator.identity.userId} on ${definition.creator.identity.channel}`,
      counts,
    };
  }

  private stored(): TriggerDefinition[] {
    const rows = this.deps.kv.get(CHAT_TRIGGERS_KEY, z.unknown());
    if (!Array.isArray(rows)) return [];
    return rows.flatMap((row) => {
      const parsed = storedTriggerSchema.safeParse(row);
      return parsed.success ? [parsed.data] : [];
    });
  }
}

/** A chat trigger reports to the chat it names, else to the chat it was made in. */
function deliverChat(trigger: TriggerConfig, from: ReplyTarget | null): ReplyTarget | undefined {
  const deliver = trigger.deliver;
  if (deliver?.channel && deliver.chat_id) return { channel: deliver.channel, chatId: deliver.chat_id };
  if ((deliver?.pushover || deliver?.ntfy) && !deliver.channel) return undefined;
  if (!from) return undefined;
  const { channel, chatId, threadId } = from;
  return { channel, chatId, ...(threadId ? { threadId } : {}) };
}
