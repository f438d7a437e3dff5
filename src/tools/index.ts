import { applyPatchTool } from "./apply-patch.js";
import { askQuestionTool } from "./ask-question.js";
import { attachmentSaveTool } from "./attachment-save.js";
import { browserTool } from "./browser.js";
import { browserOpenTool } from "./browser-open.js";
import { composioTool } from "./composio.js";
import { cronAddTool } from "./cron-add.js";
import { cronListTool } from "./cron-list.js";
import { cronRemoveTool } from "./cron-remove.js";
import { cronRunTool } from "./cron-run.js";
import { cronRunsTool } from "./cron-runs.js";
import { cronUpdateTool } from "./cron-update.js";
import type { Tool } from "./define-tool.js";
import { delegateTool } from "./delegate.js";
import { fileAppendTool } from "./file-append.js";
import { fileEditTool } from "./file-edit.js";
import { fileFindTool } from "./file-find.js";
import { fileGrepTool } from "./file-grep.js";
import { fileListTool } from "./file-list.js";
import { fileReadTool } from "./file-read.js";
import { fileWriteTool } from "./file-write.js";
import { gitOperationsTool } from "./git-operations.js";
import { gpioTool } from "./gpio.js";
import { hardwareBoardInfoTool } from "./hardware-board-info.js";
import { hardwareMemoryTool } from "./hardware-memory.js";
import { httpRequestTool } from "./http-request.js";
import { i2cTool } from "./i2c.js";
import { imageInfoTool } from "./image-info.js";
import { invokeSkillTool } from "./invoke-skill.js";
import { memoryForgetTool } from "./memory-forget.js";
import { memoryRecallTool } from "./memory-recall.js";
import { memoryStoreTool } from "./memory-store.js";
import { messageTool } from "./message.js";
import { mqttPublishTool } from "./mqtt-publish.js";
import { notifyTool } from "./notify.js";
import { pushoverTool } from "./pushover.js";
import { scheduleTool } from "./schedule.js";
import { screenshotTool } from "./screenshot.js";
import { serialTool } from "./serial.js";
import { shellTool } from "./shell.js";
import { spawnTool } from "./spawn.js";
import { spiTool } from "./spi.js";
import { spillReadTool } from "./spill-read.js";
import { triggerAddTool } from "./trigger-add.js";
import { triggerListTool } from "./trigger-list.js";
import { triggerRemoveTool } from "./trigger-remove.js";
import { webFetchTool } from "./web-fetch.js";
import { webSearchTool } from "./web-search.js";

/**
 * Every built-in tool, in one list. Each feature adds its tools here (one tool per file);
 * conditional tools decide through `isEnabled(config)`.
 */
export const builtinTools: Tool[] = [
  spillReadTool,
  fileReadTool,
  fileWriteTool,
  fileEditTool,
  fileAppendTool,
  fileListTool,
  fileFindTool,
  fileGrepTool,
  applyPatchTool,
  imageInfoTool,
  shellTool,
  gitOperationsTool,
  httpRequestTool,
  webFetchTool,
  webSearchTool,
  browserTool,
  browserOpenTool,
  screenshotTool,
  composioTool,
  memoryStoreTool,
  memoryRecallTool,
  memoryForgetTool,
  scheduleTool,
  cronAddTool,
  cronListTool,
  cronRemoveTool,
  cronRunTool,
  cronRunsTool,
  cronUpdateTool,
  messageTool,
  pushoverTool,
  notifyTool,
  attachmentSaveTool,
  askQuestionTool,
  delegateTool,
  spawnTool,
  hardwareBoardInfoTool,
  gpioTool,
  serialTool,
  i2cTool,
  spiTool,
  hardwareMemoryTool,
  triggerAddTool,
  triggerListTool,
  triggerRemoveTool,
  mqttPublishTool,
  invokeSkillTool,
];
