import path from "node:path";
import { VoiceReplies } from "../voice/voice-replies.js";
import type { MagpieFeature } from "./feature.js";

/**
 * Voice replies (`voice`): the `afterReply` hook and `/voice`. Always set up, so an owner can turn voice on in
 * one chat while `voice.replies` is off; the synthesizer and the `openai` SDK load on the first spoken reply.
 */
export const voiceFeature: MagpieFeature = {
  name: "voice",
  uses: ["spend"],
  setup(config, app) {
    const voice = new VoiceReplies({
      config: config,
      kv: app.store.kv,
      logger: app.logger.child({ component: "voice" }),
      messenger: app.messenger,
      spend: () => app.ports.spend(),
      dir: path.join(config.dataDir, "voice"),
      now: () => app.clock.now(),
    });
    return { commands: [voice.command()], hooks: [{ afterReply: (turn) => voice.afterReply(turn) }] };
  },
};
