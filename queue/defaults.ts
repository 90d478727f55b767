// Every default Herald has, and the API's limits and fixed sets, in one place. The environment
// (config.ts), the core, the worker, the CLI, the HTTP schema and the table definitions read these.
const HOUR_MS = 3_600_000;

export const DEFAULTS = {
  /** Queue of a job enqueued without one. */
  queue: 'default',
  priority: 0,
  /** Attempts before a job fails, when the producer gives none. */
  maxAttempts: 5,
  /** A lease a worker renews while it runs a job; a job whose lease runs out is re-run. */
  leaseMs: 30_000,
  /** Safety-net claim interval of an idle worker (NOTIFY wakes it sooner). */
  pollMs: 1_000,
  /**
   * How long a listener woken by a notification waits for the transactions that committed
   * alongside its sender (they skipped their own NOTIFY) before it reads; normally one commit. Only a
   * transaction that ran SET CONSTRAINTS ALL IMMEDIATE or PREPAREd holds it longer; past this the
   * read goes ahead and the poll or safety read finds what it missed.
   */
  wakeBarrierTimeoutMs: 1_000,
  /** Retry backoff: base * 2^(attempt-1), capped at the max. */
  backoffBaseMs: 1_000,
  backoffMaxMs: HOUR_MS,
  /** Finished jobs (and their events) older than this are deleted; 0 keeps them. */
  retentionMs: 7 * 24 * HOUR_MS,
  /**
   * The event log is partitioned by transaction id; each partition is sized to span about this
   * share of the retention period (so about 8 partitions are live: few enough that a query
   * which cannot prune them stays cheap), between these two spans...
   */
  eventPartitionsPerRetention: 8,
  eventPartitionMinSpanMs: HOUR_MS,
  eventPartitionMaxSpanMs: 24 * HOUR_MS,
  /** ...at the id rate the maintainer measures; before it has one, and never fewer, this many ids. */
  eventPartitionXids: 1_000_000,
  /** An overflow into the default partition: the next partition starts this many ids ahead. */
  eventPartitionSlackXids: 10_000,
  /** Adding or dropping a partition waits at most this long for its locks (writers queue behind it). */
  eventPartitionLockMs: 100,
  /**
   * A dropped partition's kept events are copied out beforehand this many events read per
   * transaction; when that leaves this many or fewer, they are copied under the drop's lock instead
   * of keeping a partition for them.
   */
  eventDropBatch: 5_000,
  eventDropSmall: 5_000,
  /**
   * HERALD_ASYNC_COMMIT: the worker's claims, renewals and outcomes commit without waiting for the
   * WAL flush. Off: a database crash can undo the last moments of acknowledged outcomes, and those
   * jobs run again.
   */
  asyncCommit: false,
  /**
   * HERALD_READ_MAX_LAG_MS: a read replica further behind than this (or down) is not read; the
   * server reads the primary until it has caught up again (docs/replicas.md).
   */
  readMaxLagMs: 5_000,
  /** How often a server with a read replica measures its replay lag (and retries a replica that was down). */
  replicaCheckMs: 1_000,
  /** On stop, how long running jobs may take to finish before they are handed back. */
  shutdownGraceMs: 30_000,
  /**
   * HERALD_LOCK_LOSS_GRACE_MS: how long a worker whose liveness lock vanished (its listener
   * connection dropped) has to renew its leases before its jobs are taken for orphans and re-run.
   * A SIGKILLed worker's jobs come back after about this plus REAP_EVERY_MS; a blip shorter than it
   * is not a death. Every worker of a database should have the same.
   */
  lockLossGraceMs: 1_000,
  /** Jobs per page of a listing (GET /api/jobs, ReadService.list). */
  listLimit: 50,
  /** Events per page of a job's timeline (GET /api/jobs/:id/events; also its most). */
  eventsLimit: 1_000,
  /** GET /api/events/recent: at most (and by default) this many, the Overview's live feed. */
  recentEventsMax: 100,
  /** Jobs a search (group, tag, payload, error, time range) looks at per page, newest first. */
  searchWindow: 100_000,
  /** Jobs per transaction of a bulk action, so the stream and vacuum never wait on a long one. */
  bulkBatch: 1_000,
  /** How often each worker and server tries the queue-history rollup (one of them does it). */
  historyEveryMs: 10_000,
  /** The span of a queue's history when a request names none (GET /api/queues/:queue/stats). */
  historyRange: '1h',
  /** How long queue history is kept. */
  historyRetentionMs: 30 * 24 * HOUR_MS,
  /** A job's progress is written at most once per this many ms (4 a second); the last value always is. */
  progressEveryMs: 250,
  /** Concurrent jobs per worker process. */
  concurrency: 10,
  /** Largest claim a worker makes, whatever its free slots. */
  maxClaim: 500,
  /**
   * Claim-ahead horizon: while claims come back full, a worker also claims what it would start
   * within this many ms at its measured pace, into a local buffer (0: free slots only).
   */
  claimAheadMs: 50,
  /** A buffered job not started after this long goes back to the queue. */
  claimAheadTtlMs: 5_000,
  /** Open SSE streams one server serves (HERALD_MAX_STREAMS); past it a new one gets 503 with Retry-After. */
  maxStreams: 10_000,
  /** Processes `herald server` runs on its one port (HERALD_STREAM_PROCESSES): more spread the SSE fan-out over cores. */
  streamProcesses: 1,
  host: '127.0.0.1',
  port: 3000,
  dataDir: '.herald',
  logLevel: 'info',
  /** HERALD_LOG_FORMAT: 'auto' = pretty when the log goes to a terminal, JSON lines otherwise. */
  logFormat: 'auto',
  /** Time zone of a schedule that names none. */
  timezone: 'UTC',
} as const;

/** How often each worker tries the reaper (one acts at a time): a SIGKILLed worker's jobs come back within ~2 s. */
export const REAP_EVERY_MS = 500;
/**
 * A lease renewal that failed is tried again this soon, not a third of a lease later: after a
 * blip, the jobs' leases may be down to the grace above.
 */
export const RENEW_RETRY_MS = 200;
/**
 * A renewal not answered by then is given up (its connection is dropped) and retried on another:
 * one stuck on a dead socket must not hold back the ones after it.
 */
export const RENEW_TIMEOUT_MS = 2_000;
/**
 * A worker stops a handler (its signal fires) when no renewal has reached the database for this
 * share short of the lease (or, after its listener was cut, of the grace): before the reaper can
 * give the job to another worker, so two handlers of one job never run at once.
 */
export const LOCAL_DEADLINE_SHARE = 0.9;
/**
 * A worker's start check (worker/may-start.ts) admits the starts of this many ms after it was
 * asked; a PATCH that holds a queue waits HOLD_SETTLE_MS after its change before it returns, so
 * that no start an older answer admits comes after it. Twice as long: the margin covers a pause
 * of the worker's process between its look at the clock and the handler's call.
 * Not settings: a worker reusing answers longer than its server waits would break the promise.
 */
export const START_CHECK_REUSE_MS = 50;
export const HOLD_SETTLE_MS = 2 * START_CHECK_REUSE_MS;
/**
 * The listener retries a lost connection this often at first (a blip is over within the grace),
 * then backs off, doubling, to LISTENER_RETRY_MAX_MS.
 */
export const LISTENER_RETRY_MS = 100;
export const LISTENER_FAST_RETRIES = 10;
export const LISTENER_RETRY_MAX_MS = 5_000;
/**
 * A process that could not LISTEN when it started (its listen URL unreachable, or a NOTIFY probe
 * that never came back: a transaction pooler, or a boot too loaded to answer in time) polls, and
 * keeps trying, doubling from LISTENER_RETRY_MS to this: a pooler costs a probe twice a minute,
 * and a database that was away at boot is listened to again within seconds of its return.
 */
export const LISTENER_POLLING_RETRY_MAX_MS = 30_000;
/** The listener checks its connection this often; a check not answered in as long drops it. */
export const LISTENER_CHECK_MS = 5_000;
/** A worker's connection attempt (listener or pool) that gets no answer for this long fails. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Largest result a durable step may store (its JSON text), and most records a job may hold. */
export const MAX_STEP_RESULT_BYTES = 1024 * 1024;
export const MAX_STEPS = 10_000;
/** Where a wait without a timeout puts runAt (a signal or the invoked job's end brings it forward). */
export const WAIT_FOREVER_MS = 100 * 365 * 24 * HOUR_MS;

/** The most attempts a job may have (a database check; retry never goes past it). */
export const MAX_ATTEMPTS_LIMIT = 1000;

/**
 * Most dependsOn entries (edges) one request may carry, over all its jobs: each parent's end
 * touches its children, so the edges bound what one producer can make the database do.
 */
export const MAX_FLOW_EDGES = 10_000;

/** Most tags a job may carry (a database check). */
export const MAX_TAGS = 16;
/** Most capabilities a job may require (a database check). */
export const MAX_REQUIRES = 32;
/** Longest queue, kind, group, tag or schedule name. */
export const MAX_NAME_LENGTH = 128;
/** What such a name may be (the database's checks hold the pattern). */
export const NAME_RULE = `1-${MAX_NAME_LENGTH} characters of [A-Za-z0-9_.:-]`;
/**
 * A flow's name is what a person writes ("order 42", "Rechnung Müller"): it never goes into a URL,
 * a NOTIFY payload or a log key, so it is text, of the same length as a name.
 */
export const FLOW_NAME_RULE = `1-${MAX_NAME_LENGTH} characters, without control characters, neither starting nor ending with a space`;
/** FLOW_NAME_RULE's characters as a regex that JavaScript (the HTTP schema) and PostgreSQL (the table's check) read alike. */
export const FLOW_NAME_PATTERN = '^[^ \\x00-\\x1f\\x7f]([^\\x00-\\x1f\\x7f]*[^ \\x00-\\x1f\\x7f])?$';
/** Longest attempt a job may ask for (timeoutMs): one day. */
export const MAX_TIMEOUT_MS = 86_400_000;

/**
 * How much of a body over the limit the server reads and drops before its 413: a client still
 * sending would otherwise meet a closed socket (EPIPE, a reset) instead of the reply. Past this,
 * the 413 goes out at once.
 */
export const MAX_DRAINED_BODY = 16 * 1024 * 1024;

/** The shortest token HERALD_TOKENS accepts: a shorter one can be guessed. */
export const MIN_TOKEN_LENGTH = 16;

/** How often a worker refreshes its registry row (last_seen_at). */
export const WORKER_HEARTBEAT_MS = 2_000;
/** A registry row not refreshed for this long is dead, lock or not (a frozen or cut-off process). */
export const WORKER_STALE_MS = 5 * WORKER_HEARTBEAT_MS;

/** What a bulk action can do to the jobs a filter matches (POST /api/jobs/bulk). */
export const BULK_ACTIONS = ['retry', 'cancel', 'delete', 'redrive', 'run_now'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** Bounds of the queue settings (PATCH /api/queues/:queue); the table's checks say the same. */
export const QUEUE_LIMITS = {
  concurrency: { min: 1, max: 10_000 },
  rateCount: { min: 1, max: 100_000 },
  ratePeriodMs: { min: 100, max: 86_400_000 },
} as const;

/**
 * How many ready jobs of a queue the stalled-queue check walks past when its oldest ones are jobs
 * no live worker runs (queue heads): the cost of one read a second stays bounded.
 */
export const QUEUE_HEAD_LOOK_PAST = 1_000;

/**
 * The alert thresholds: the server's own view (GET /api/alerts, the board's Health page) uses
 * these; ops/prometheus/alerts.yml writes the same numbers into its rules (a test keeps them equal).
 */
export const ALERT_THRESHOLDS = {
  /** HeraldJobsFailing: share of a queue's finished jobs that failed for good, over the window... */
  failingRatio: 0.1,
  /** ...once at least this many failed in it (one failure of one job is not a trend). */
  failingMinJobs: 5,
  failingWindowMin: 10,
  /** HeraldQueueStalled: a queue's oldest ready job that a live worker runs has waited this long. */
  stalledSeconds: 300,
  /** HeraldNoWorker: a queue's oldest ready job has waited this long, and no live worker runs it (its queue, kind or requires). */
  noWorkerSeconds: 60,
  /** HeraldStreamHeld: a transaction has held the event stream back this long. */
  streamHeldSeconds: 60,
  /** HeraldWorkersDying: this many lease expiries (dead, frozen or cut-off workers) in the window. */
  leaseExpiries: 3,
  leaseWindowMin: 15,
  /** HeraldReplicaLagging: the read replica has been more than HERALD_READ_MAX_LAG_MS behind (or down) this long. */
  replicaLaggingSeconds: 60,
} as const;
