"""E4 whole-node job (seed 003): the program one HTCondor job runs on an HPC "node".

Shipped with the job (transfer_input_files) and run by the guest's python3; it
imports only the standard library and, for the database, PyMySQL (Debian's
python3-pymysql, in the box). It never imports the testbed package.

Roles (node.json, written by the suite):
- `tasks`: the node's start-up, timed part by part as the paper's (T): in one
  thread copy the calibration dump from the shared area to node-local scratch,
  initialise and start a private MariaDB as the job's user and load the dump
  (layout `colocated`) or wait until the dedicated DB node answers (layout
  `dedicated`); in another thread a random start delay, then load the software
  environment (walk + read every file of the shared area: metadata heavy). Then N
  "reconstruction" tasks (forked processes): per event, calibration look-ups
  (`... where beginTime <= t order by beginTime desc limit 1`) and CPU work. With
  `backfill_events` > 0 an event service starts short tasks on task slots that
  went idle, when they are predicted to end before the node's last task.
- `db`: the dedicated DB node: the same DB start-up, then it serves the site
  network until its clients have come and gone (or `serve_s` passed).
- `generate`: write the calibration dump and the software area (on the host that
  exports them; not a job).
The report (e4-report.json) is the job's output; the suite reads it.
"""
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time

CLIENT_USER = "reader"             # the tasks' DB user (read-only on calib)
TABLES = ("tpcGain", "tpcT0", "tofCalib", "emcPed", "bbcGain", "vpdTotCorr", "ftpcVDrift", "svtDrift")
T_BEGIN = 1_500_000_000          # the calibration time range: beginTime from here ...
T_SPAN = 30 * 86400              # ... over 30 days


# --- generated inputs (pure, testable) ----------------------------------------------------
def dump_lines(target_bytes, seed=3):
    """SQL statements of a calibration dump of about `target_bytes`: one table per
    detector, rows (beginTime, elementID, payload) indexed on beginTime, as STAR's DB."""
    rng = random.Random(seed)
    yield "SET NAMES utf8mb4;"
    per_table = max(1, target_bytes // len(TABLES))
    for table in TABLES:
        yield f"DROP TABLE IF EXISTS {table};"
        yield (f"CREATE TABLE {table} (dataID INT AUTO_INCREMENT PRIMARY KEY, beginTime DATETIME NOT NULL, "
               f"elementID INT NOT NULL, payload VARCHAR(1024) NOT NULL, KEY (beginTime)) ENGINE=MyISAM;")
        written, row = 0, 0
        while written < per_table:
            values = []
            for _ in range(200):
                # the first row is valid from the start of the range, as a detector's
                # initial calibration is: every look-up in the range finds a row
                t = T_BEGIN + (rng.randrange(T_SPAN) if row else 0)
                payload = "%032x" % rng.getrandbits(128) * 12
                values.append(f"(FROM_UNIXTIME({t}),{row % 64},'{payload}')")
                row += 1
            stmt = f"INSERT INTO {table} (beginTime,elementID,payload) VALUES " + ",".join(values) + ";"
            written += len(stmt)
            yield stmt


def env_tree(files, seed=3):
    """[(relative path, size)] of a software area of `files` small files in nested dirs."""
    rng = random.Random(seed)
    return [(f"lib{i // 400:02d}/pkg{(i // 20) % 20:02d}/mod{i:05d}.so", 512 + rng.randrange(3584))
            for i in range(files)]


def lookup_sql(table):
    """STAR's StDbSql-style indexed time-range query (the newest row valid at t)."""
    return (f"SELECT dataID, elementID, payload FROM {table} WHERE beginTime <= FROM_UNIXTIME(%s) "
            f"ORDER BY beginTime DESC LIMIT 1")


def draw_events(rng, mean, sigma):
    """Events of one task: Gaussian, at least 1."""
    return max(1, int(round(rng.gauss(mean, sigma))))


def backfill_fits(now, rate, events, predicted_end):
    """May a back-fill task of `events` events (at `rate` s of real time per event) start at
    `now`? Only if it is predicted to end before the node's last original task."""
    return rate > 0 and now + events * rate <= predicted_end


def predicted_end(running, rate):
    """The latest predicted end of the running original tasks: {id: (start, events)}."""
    return max((start + events * rate for start, events in running.values()), default=0.0)


# --- on the guest ---------------------------------------------------------------------------
def _tool(name):
    """A MariaDB program by full path: a job's PATH has no /usr/sbin (mariadbd lives there)."""
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]:
        path = os.path.join(d, name)
        if d and os.access(path, os.X_OK):
            return path
    return name


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class MariaDB:
    """A private MariaDB as the job's user: datadir, socket and port under `base`."""

    def __init__(self, base, cnf, port):
        self.base, self.cnf, self.port = base, cnf, port
        self.datadir, self.socket = os.path.join(base, "data"), os.path.join(base, "mysqld.sock")
        self.proc = None

    def flags(self):
        # --defaults-file must come first; the paths override anything the template says
        return [f"--defaults-file={self.cnf}", f"--datadir={self.datadir}", f"--socket={self.socket}",
                f"--pid-file={self.base}/mysqld.pid", f"--port={self.port}", f"--log-error={self.base}/error.log",
                f"--tmpdir={self.base}"]

    def install(self):
        os.makedirs(self.datadir, exist_ok=True)
        _run([_tool("mariadb-install-db"), f"--defaults-file={self.cnf}", f"--datadir={self.datadir}",
              "--auth-root-authentication-method=normal", "--skip-test-db"])

    def start(self, timeout=300):
        self.proc = subprocess.Popen([_tool("mariadbd")] + self.flags(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mariadbd exited {self.proc.returncode}: {self.error_tail()}")
            if self.sql("SELECT 1", check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError(f"mariadbd did not answer within {timeout} s: {self.error_tail()}")

    def error_tail(self):
        try:
            with open(f"{self.base}/error.log") as f:
                return f.read()[-400:]
        except OSError:
            return ""

    def sql(self, statement=None, stdin=None, check=True, database=""):
        cmd = [_tool("mariadb"), "--no-defaults", "-uroot", f"--socket={self.socket}", "--batch"]
        cmd += [database] if database else []
        cmd += ["-e", statement] if statement else []
        out = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True)
        if check and out.returncode:
            raise RuntimeError(f"mariadb client: {out.stderr.strip()[-300:]}")
        return out

    def load(self, dump, password, network):
        self.sql("CREATE DATABASE IF NOT EXISTS calib")
        with open(dump) as f:
            self.sql(stdin=f, database="calib")
        users = [f"'{CLIENT_USER}'@'localhost'"] + ([f"'{CLIENT_USER}'@'{network}'"] if network else [])
        for user in users:
            self.sql(f"CREATE USER IF NOT EXISTS {user} IDENTIFIED BY '{password}'; "
                     f"GRANT SELECT ON calib.* TO {user}")

    def status(self, name):
        return self.statuses(name).get(name)

    def statuses(self, *names):
        """{name: int} of global status variables, read over one connection."""
        listed = ", ".join(f"'{n}'" for n in names)
        out = self.sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({listed})", check=False).stdout
        return parse_statuses(out)

    def user_connections(self, user):
        """(total, concurrent) connections of `user` (needs userstat = 1)."""
        out = self.sql("SELECT USER, TOTAL_CONNECTIONS, CONCURRENT_CONNECTIONS "
                       "FROM information_schema.USER_STATISTICS", check=False).stdout
        return parse_user_connections(out, user)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def parse_statuses(text):
    """{name: int} from SHOW STATUS output (name and value per line, tab-separated)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def cpu_jiffies(stat_text):
    """/proc/stat's first line -> (busy, total) jiffies over all CPUs; busy leaves out idle
    and iowait (a read waiting on NFS is not the core's work)."""
    fields = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    total = sum(fields[:8])          # user nice system idle iowait irq softirq steal
    return total - fields[3] - fields[4], total


def busy_fraction(before, after):
    """The share of the node's core time spent busy between two cpu_jiffies readings."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return busy / total if total > 0 else 0.0


def read_cpu():
    with open("/proc/stat") as f:
        return cpu_jiffies(f.read())


def timed(parts, name, fn, *args):
    t = time.time()
    out = fn(*args)
    parts[name] = time.time() - t
    return out


def copy_dump(cfg, scratch):
    local = os.path.join(scratch, "local", "calib.sql")
    os.makedirs(os.path.dirname(local), exist_ok=True)
    shutil.copyfile(os.path.join(cfg["shared"], "calib", "calib.sql"), local)
    return local


def load_env(cfg):
    """Walk and read the software area; return (files, bytes)."""
    files = size = 0
    h = hashlib.sha1()
    for root, dirs, names in os.walk(os.path.join(cfg["shared"], "env")):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            os.stat(path)
            with open(path, "rb") as f:
                data = f.read()
            h.update(data[:64])
            files, size = files + 1, size + len(data)
    return files, size


def connect(cfg, scratch):
    import pymysql
    if cfg["layout"] == "colocated":
        return pymysql.connect(unix_socket=os.path.join(scratch, "db", "mysqld.sock"), user=CLIENT_USER,
                               password=cfg["password"], database="calib")
    return pymysql.connect(host=cfg["db_host"], port=cfg["db_port"], user=CLIENT_USER, password=cfg["password"],
                           database="calib", connect_timeout=10)


def wait_for_db(cfg, scratch, timeout):
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        try:
            connect(cfg, scratch).close()
            return
        except Exception as exc:  # noqa: BLE001 - keep trying until the deadline
            last = exc
            time.sleep(1)
    raise RuntimeError(f"the dedicated DB at {cfg['db_host']}:{cfg['db_port']} did not answer: {last}")


def run_task(cfg, scratch, task_id, kind, events, seed):
    """One reconstruction task (a forked process); writes tasks/<id>.json."""
    rng = random.Random(seed)
    start, c0 = time.time(), time.process_time()
    answered = lookups = 0
    event_cpu = []
    conn = connect(cfg, scratch)
    cur = conn.cursor()
    for _ in range(events):
        e0 = time.process_time()
        for _ in range(cfg["lookups_per_event"]):
            cur.execute(lookup_sql(rng.choice(TABLES)), (T_BEGIN + rng.randrange(T_SPAN),))
            lookups += 1
            answered += 1 if cur.fetchone() else 0
        work = max(1, int(rng.gauss(cfg["event_work"], cfg["event_work"] * cfg["event_work_sigma"])))
        digest = b"star"
        for _ in range(work):
            digest = hashlib.sha256(digest).digest()
        event_cpu.append(round(time.process_time() - e0, 6))
    conn.close()
    rec = {"id": task_id, "kind": kind, "start": start, "end": time.time(), "cpu": time.process_time() - c0,
           "events": events, "lookups": lookups, "answered": answered, "event_cpu": event_cpu}
    with open(os.path.join(scratch, "tasks", f"{task_id}.json"), "w") as f:
        json.dump(rec, f)


def run_tasks(cfg, scratch):
    """N tasks, then back-fill tasks on idle task slots while they fit (event service)."""
    os.makedirs(os.path.join(scratch, "tasks"), exist_ok=True)
    rng = random.Random(cfg["seed"])
    running, original, ended = {}, {}, []

    def fork(task_id, kind, events):
        # the seed is drawn here, in the parent: drawn in the child, it left the parent's
        # generator where it was, and after a gauss() (which caches every second value)
        # two tasks in a row got the same seed, so the same look-ups and work
        seed = rng.randrange(1 << 30)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                run_task(cfg, scratch, task_id, kind, events, seed)
            except Exception as exc:  # noqa: BLE001 - the report says which task failed
                sys.stderr.write(f"task {task_id}: {exc}\n")
                code = 1
            os._exit(code)
        running[pid] = (task_id, kind, time.time(), events)
        if kind == "task":
            original[task_id] = (time.time(), events)

    for i in range(cfg["tasks"]):
        fork(f"t{i:03d}", "task", draw_events(rng, cfg["events_mean"], cfg["events_sigma"]))
    n_bf = 0
    while running:
        pid, status = os.waitpid(-1, 0)
        task_id, kind, start, events = running.pop(pid)
        original.pop(task_id, None)
        ended.append((time.time() - start) / events)
        if not cfg["backfill_events"] or not original:
            continue
        rate = sum(ended) / len(ended)   # real seconds per event so far on this node
        end = predicted_end(original, rate)
        while len(running) < cfg["tasks"] and backfill_fits(time.time(), rate, cfg["backfill_events"], end):
            fork(f"b{n_bf:03d}", "backfill", cfg["backfill_events"])
            n_bf += 1
    tasks = []
    for name in sorted(os.listdir(os.path.join(scratch, "tasks"))):
        with open(os.path.join(scratch, "tasks", name)) as f:
            tasks.append(json.load(f))
    return tasks


def node(cfg):
    scratch = os.environ.get("_CONDOR_SCRATCH_DIR", os.getcwd())
    t0 = time.time()
    rep = {"role": cfg["role"], "layout": cfg["layout"], "node": cfg["node"], "host": socket.gethostname(),
           "cpus": os.cpu_count(), "start": t0, "parts": {}, "errors": []}
    parts = rep["parts"]
    cpu0 = read_cpu()
    db = MariaDB(os.path.join(scratch, "db"), os.path.abspath(cfg["cnf"]), cfg["port"])

    def database():
        try:
            if cfg["role"] == "db" or cfg["layout"] == "colocated":
                os.makedirs(db.base, exist_ok=True)
                dump = timed(parts, "copy", copy_dump, cfg, scratch)
                rep["dump_bytes"] = os.path.getsize(dump)
                timed(parts, "install", db.install)
                timed(parts, "start", db.start)
                timed(parts, "load", db.load, dump, cfg["password"], cfg.get("network", ""))
            else:
                timed(parts, "db_wait", wait_for_db, cfg, scratch, cfg["db_wait_s"])
        except Exception as exc:  # noqa: BLE001
            rep["errors"].append(f"database: {exc}")

    def environment():
        try:
            rng = random.Random(cfg["seed"] + 7)
            timed(parts, "delay", time.sleep, rng.uniform(min(1.0, cfg["delay_max_s"]), cfg["delay_max_s"]))
            rep["env_files"], rep["env_bytes"] = timed(parts, "env", load_env, cfg)
        except Exception as exc:  # noqa: BLE001
            rep["errors"].append(f"environment: {exc}")

    threads = [threading.Thread(target=database)] + ([threading.Thread(target=environment)]
                                                     if cfg["role"] == "tasks" else [])
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rep["tasks_start"] = time.time()
    rep["T"] = rep["tasks_start"] - t0
    rep["startup_cpu_busy"] = busy_fraction(cpu0, read_cpu())
    try:
        if rep["errors"]:
            rep["tasks"] = []
        elif cfg["role"] == "tasks":
            rep["tasks"] = run_tasks(cfg, scratch)
        else:
            rep["served"] = serve(cfg, db)
    finally:
        if cfg["role"] == "db" or cfg["layout"] == "colocated":
            rep["questions"] = db.status("Questions")
            db.stop()
        rep["end"] = time.time()
        with open("e4-report.json", "w") as f:
            json.dump(rep, f)
    return rep


def serve(cfg, db):
    """The dedicated DB node serves until its clients have connected (`tasks_expected`
    connections of user reader, counted by the server's USER_STATISTICS from the moment
    the user exists) and none is left for `idle_s`, or `serve_s` passed. Counted by user,
    not by the server's Connections: the node's own queries are connections too, and a
    client that came before the loop's first reading would be missed.
    Returns {connections, seconds}."""
    t0, idle_since, clients = time.time(), None, 0
    while time.time() - t0 < cfg["serve_s"]:
        time.sleep(2)
        clients, now = db.user_connections(CLIENT_USER)
        if clients >= cfg["tasks_expected"] and now == 0:
            idle_since = idle_since or time.time()
            if time.time() - idle_since >= cfg["idle_s"]:
                break
        else:
            idle_since = None
    return {"connections": clients, "seconds": time.time() - t0}


def parse_user_connections(text, user):
    """(total, concurrent) connections of `user` from USER_STATISTICS rows (0, 0 if none)."""
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == user and parts[1].isdigit() and parts[2].isdigit():
            return int(parts[1]), int(parts[2])
    return 0, 0


def generate(root, dump_mb, env_files):
    """The shared area: calib/calib.sql and env/... (idempotent: kept if the same size)."""
    os.makedirs(os.path.join(root, "calib"), exist_ok=True)
    marker = os.path.join(root, "calib", f".made-{dump_mb}-{env_files}")
    if os.path.exists(marker):
        return
    with open(os.path.join(root, "calib", "calib.sql"), "w") as f:
        for line in dump_lines(int(dump_mb * 1e6)):
            f.write(line + "\n")
    shutil.rmtree(os.path.join(root, "env"), ignore_errors=True)
    for rel, size in env_tree(env_files):
        path = os.path.join(root, "env", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
    open(marker, "w").close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["generate"]:
        generate(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
    else:
        with open(sys.argv[1] if len(sys.argv) > 1 else "node.json") as fh:
            config = json.load(fh)
        if len(sys.argv) > 2:  # one submit description for every node: $(Process) picks the node
            index = int(sys.argv[2])
            config.update(node=index, port=config["port"] + index, seed=config["seed"] + 1000 * index)
        report = node(config)
        sys.exit(1 if report["errors"] else 0)
