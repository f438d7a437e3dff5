/** What a turn's keys say about where it came from: a scheduled job's run, a subagent's task. */
export interface OriginIds {
  jobId: number | null;
  runId: number | null;
  taskId: string | null;
}

const JOB_RUN = /^cron:(\d+):(\d+)$/;
const TASK = /^spawn:(.+)$/;

/**
 * The job run and task behind a history key (`cron:<job>:<run>`, `spawn:<task>`). A turn a job run started
 * (a delegation, a subagent) keeps the run's session key, so the run is found there too: `perJobRun` covers
 * everything the run set off.
 */
export function originIds(historyKey: string, sessionKey: string): OriginIds {
  const run = JOB_RUN.exec(historyKey) ?? JOB_RUN.exec(sessionKey);
  const task = TASK.exec(historyKey);
  return {
    jobId: run ? Number(run[1]) : null,
    runId: run ? Number(run[2]) : null,
    taskId: task ? task[1]! : null,
  };
}
