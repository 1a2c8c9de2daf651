//! A throwaway PostgreSQL cluster for the PostgreSQL store's tests: `initdb` in a
//! temporary folder, `pg_ctl start` on a Unix socket in that folder (no TCP), password
//! authentication (so that a wrong password can be tested), `fsync=off` (a test cluster
//! need not survive a power loss). Started once per test binary on first use and
//! stopped when the binary exits. Never a mock: a test skips, saying why, only when the
//! machine has no PostgreSQL server binaries at all (CI installs them through
//! scripts/prereqs.sh, so there the tests run); any other problem fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The superuser's password in every throwaway cluster.
pub const PASSWORD: &str = "pw-Secr3t-9f2c";

pub struct Cluster {
    /// The temporary folder: data directory and socket inside.
    pub root: PathBuf,
    pub data: PathBuf,
    pub socket: PathBuf,
    bin: PathBuf,
    /// Run the server's tools as this user (root may not run them).
    as_user: Option<String>,
    /// The port: of the Unix socket's name, and of 127.0.0.1 when TLS is on.
    pub port: u16,
    /// The server's certificate (PEM), when it has TLS on.
    pub cert: Option<PathBuf>,
    /// The test CA's certificate, when a CA signed `cert` (else `cert` is self-signed).
    pub ca: Option<PathBuf>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The cluster of this test binary, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let cluster = Cluster::start();
        // SAFETY: `stop_at_exit` is a plain extern "C" function without arguments.
        unsafe { libc::atexit(stop_at_exit) };
        cluster
    })
}

extern "C" fn stop_at_exit() {
    if let Some(cluster) = CLUSTER.get() {
        cluster.stop();
    }
}

/// Whether the machine has PostgreSQL server binaries; when not, prints why the calling
/// test is skipped. Every test of the PostgreSQL store starts with it.
pub fn available() -> bool {
    let found = find_bin_dir().is_some();
    if !found {
        eprintln!(
            "SKIP: no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql \
             and no SESSION_PG_BIN: install the Debian package postgresql (scripts/prereqs.sh does)"
        );
    }
    found
}

fn find_bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("SESSION_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// The newest PostgreSQL server binaries on the machine, or a loud failure.
fn bin_dir() -> PathBuf {
    find_bin_dir().unwrap_or_else(|| {
        panic!(
            "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql: \
             install the Debian package postgresql (scripts/prereqs.sh does), or set SESSION_PG_BIN"
        )
    })
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A cluster of its own, for a test that restarts the server; stopped when dropped.
pub struct Private(pub Cluster);

impl Private {
    pub fn start() -> Private {
        Private(Cluster::start())
    }

    /// A streaming standby of `primary` in a folder (and socket folder) of its own:
    /// `pg_basebackup -R` from the primary, then started; it answers reads (hot
    /// standby) and replays what the primary commits.
    pub fn standby_of(primary: &Cluster) -> Private {
        Private(Cluster::standby_of(primary))
    }

    /// A cluster with `ssl=on` that also listens on 127.0.0.1 (a free port), with a
    /// self-signed certificate for `localhost` made by the `openssl` command, and a
    /// pg_hba.conf that takes TCP connections over TLS only (`hostssl`, password).
    pub fn start_tls() -> Private {
        Private(Cluster::start_with(Some(Signer::Itself)))
    }

    /// As [`Private::start_tls`], with the certificate signed by a test CA (`ca`), so
    /// that a client checks a chain rather than finding the server's own certificate.
    pub fn start_tls_with_ca() -> Private {
        Private(Cluster::start_with(Some(Signer::Ca)))
    }
}

/// Who signs the TLS server's certificate.
#[derive(Clone, Copy, PartialEq)]
enum Signer {
    Itself,
    Ca,
}

fn openssl(args: &[&str], what: &str) {
    run(Command::new("openssl").args(args), what);
}

/// A new RSA key at `key` and a certificate for it at `cert`, signed by itself, for
/// one day, with the subject `subject` and `extra` arguments of `openssl req`.
pub fn self_signed(subject: &str, extra: &[&str], key: &str, cert: &str) {
    let mut args = vec![
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-days", "1",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-keyout", key, "-out", cert]);
    openssl(&args, &format!("openssl req -x509 ({subject})"));
}

/// A key and a certificate for `localhost` in `root` (key mode 0600); with `Signer::Ca`
/// also a CA, whose certificate is returned second.
fn make_certificate(root: &Path, signer: Signer) -> (PathBuf, Option<PathBuf>) {
    let path = |name: &str| root.join(name).display().to_string();
    let (cert, key) = (path("server.crt"), path("server.key"));
    let ca = match signer {
        Signer::Itself => {
            self_signed(
                "/CN=localhost",
                &["-addext", "subjectAltName=DNS:localhost"],
                &key,
                &cert,
            );
            None
        }
        Signer::Ca => {
            let (ca, ca_key, csr, ext) = (
                path("ca.crt"),
                path("ca.key"),
                path("server.csr"),
                path("server.ext"),
            );
            self_signed("/CN=libsession test CA", &[], &ca_key, &ca);
            openssl(
                &[
                    "req",
                    "-new",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-subj",
                    "/CN=localhost",
                    "-keyout",
                    &key,
                    "-out",
                    &csr,
                ],
                "openssl req -new (the test server's request)",
            );
            std::fs::write(
                &ext,
                "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\n",
            )
            .unwrap();
            openssl(
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    &ca,
                    "-CAkey",
                    &ca_key,
                    "-CAcreateserial",
                    "-days",
                    "1",
                    "-extfile",
                    &ext,
                    "-out",
                    &cert,
                ],
                "openssl x509 -req (the test server's certificate)",
            );
            Some(PathBuf::from(ca))
        }
    };
    run(
        Command::new("chmod").arg("0600").arg(&key),
        "chmod of the key",
    );
    (PathBuf::from(cert), ca)
}

/// Whether the machine has the `openssl` command (for the TLS test's certificate); when
/// not, prints why the calling test is skipped.
pub fn openssl_available() -> bool {
    let found = Command::new("openssl").arg("version").output().is_ok();
    if !found {
        eprintln!(
            "SKIP: no `openssl` command to make the TLS test's certificate: install the \
             Debian package openssl"
        );
    }
    found
}

/// A TCP port that nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

impl Drop for Private {
    fn drop(&mut self) {
        self.0.stop();
    }
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::start_with(None)
    }

    /// See [`Private::standby_of`].
    fn standby_of(primary: &Cluster) -> Cluster {
        let cluster = Cluster::empty(None);
        cluster.base_backup(primary);
        cluster.pg_ctl("start");
        cluster
    }

    /// Replaces the data folder with a new base backup of `primary` (with `-R`: a
    /// standby of it). The server must be stopped.
    pub fn base_backup(&self, primary: &Cluster) {
        let _ = std::fs::remove_dir_all(&self.data);
        let mut cmd = self.tool("pg_basebackup");
        cmd.env("PGPASSWORD", PASSWORD)
            .arg("-D")
            .arg(&self.data)
            .args(["-R", "-X", "stream", "-c", "fast", "-U", "postgres", "-h"])
            .arg(&primary.socket)
            .arg("-p")
            .arg(primary.port.to_string());
        run(&mut cmd, "pg_basebackup");
    }

    /// `pg_ctl start` (after [`Cluster::kill`] or [`Cluster::base_backup`]).
    pub fn start_again(&self) {
        self.pg_ctl("start");
    }

    /// `pg_ctl stop -m immediate`: the server dies as in a crash; the folder stays.
    pub fn kill(&self) {
        let mut cmd = self.tool("pg_ctl");
        cmd.arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]);
        run(&mut cmd, "pg_ctl stop -m immediate");
    }

    /// `pg_ctl promote`, waiting until the standby takes writes.
    pub fn promote(&self) {
        let mut cmd = self.tool("pg_ctl");
        cmd.arg("-D").arg(&self.data).args(["-w", "promote"]);
        run(&mut cmd, "pg_ctl promote");
    }

    fn start_with(tls: Option<Signer>) -> Cluster {
        let cluster = Cluster::empty(tls);
        let mut initdb = cluster.tool("initdb");
        initdb
            .arg("-D")
            .arg(&cluster.data)
            .args([
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--auth=scram-sha-256",
            ])
            .arg(format!(
                "--pwfile={}",
                cluster.root.join("pwfile").display()
            ));
        run(&mut initdb, "initdb");
        if cluster.cert.is_some() {
            // Unix socket as before; TCP only with TLS (no `host`/`hostnossl` line).
            std::fs::write(
                cluster.data.join("pg_hba.conf"),
                "local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .unwrap();
        }
        cluster.pg_ctl("start");
        cluster
    }

    /// A cluster's folders, owned by the server's user; no data folder yet.
    fn empty(tls: Option<Signer>) -> Cluster {
        let bin = bin_dir();
        // SAFETY: geteuid(2) has no preconditions.
        let as_user = (unsafe { libc::geteuid() } == 0).then(|| "postgres".to_owned());
        // Removed by `stop`, which runs at the binary's exit for the shared cluster.
        let root = super::temp_dir("pg").keep();
        let data = root.join("data");
        let socket = root.join("sock");
        std::fs::create_dir_all(&socket).unwrap();
        std::fs::write(root.join("pwfile"), PASSWORD).unwrap();
        let (cert, ca) = match tls {
            Some(signer) => {
                let (cert, ca) = make_certificate(&root, signer);
                (Some(cert), ca)
            }
            None => (None, None),
        };
        if let Some(user) = &as_user {
            run(
                Command::new("chown").args(["-R", user]).arg(&root),
                "chown of the test cluster's folder",
            );
        }
        Cluster {
            root,
            data,
            socket,
            bin,
            as_user,
            port: if tls.is_some() { free_port() } else { 5432 },
            cert,
            ca,
        }
    }

    /// One of the server's programs, run as the cluster's owner.
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        match &self.as_user {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    fn pg_ctl(&self, action: &str) {
        let mut options = format!(
            "-k {} -p {} -c fsync=off -c max_connections=60",
            self.socket.display(),
            self.port
        );
        // Settings for a benchmark run (`PG_SERVER_SETTINGS="-c shared_buffers=1GB"`):
        // the tests never set it.
        if let Ok(extra) = std::env::var("PG_SERVER_SETTINGS") {
            options.push(' ');
            options.push_str(&extra);
        }
        match &self.cert {
            None => options.push_str(" -c listen_addresses=''"),
            Some(cert) => options.push_str(&format!(
                " -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                cert.display(),
                self.root.join("server.key").display()
            )),
        }
        let mut cmd = self.tool("pg_ctl");
        cmd.arg("-D")
            .arg(&self.data)
            .args(["-o", &options, "-w", "-l"])
            .arg(self.root.join("log"))
            .arg(action);
        if action == "stop" || action == "restart" {
            cmd.args(["-m", "fast"]);
        }
        run(&mut cmd, &format!("pg_ctl {action}"));
    }

    /// `pg_ctl restart`: every open connection is cut.
    pub fn restart(&self) {
        self.pg_ctl("restart");
    }

    /// Stops the server and removes the folder (best effort: at exit).
    pub fn stop(&self) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.root);
    }

    /// The connection string of database `db` as the superuser.
    pub fn conninfo_db(&self, db: &str) -> String {
        format!(
            "host={} port={} user=postgres password={PASSWORD} dbname={db}",
            self.socket.display(),
            self.port
        )
    }

    /// The connection string of the default database over TCP to `host` (TLS
    /// clusters listen on 127.0.0.1), with the TLS parameters `tls`.
    pub fn tcp_conninfo(&self, host: &str, tls: &str) -> String {
        format!(
            "host={host} port={} user=postgres password={PASSWORD} dbname=postgres \
             connect_timeout=10 {tls}",
            self.port
        )
    }

    /// The connection string of the default database on whichever of `clusters` first
    /// accepts a connection with `target_session_attrs` = `attrs`, tried in order.
    pub fn multi_host(clusters: &[&Cluster], attrs: &str) -> String {
        let hosts: Vec<String> = clusters
            .iter()
            .map(|c| c.socket.display().to_string())
            .collect();
        let ports: Vec<String> = clusters.iter().map(|c| c.port.to_string()).collect();
        format!(
            "host={} port={} user=postgres password={PASSWORD} dbname=postgres \
             target_session_attrs={attrs}",
            hosts.join(","),
            ports.join(",")
        )
    }

    /// Waits until the server (a standby) holds `rows` rows of `session`, checking
    /// every 20 ms; fails after two minutes.
    pub fn wait_for_rows(&self, session: &str, rows: usize) {
        for _ in 0..6000 {
            let n = self.sql(
                "postgres",
                &format!("SELECT count(*) FROM libsession_entries WHERE session_id = '{session}'"),
            );
            if n.trim().parse::<usize>().ok() == Some(rows) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the standby did not replay {rows} rows of {session}");
    }

    /// Makes every commit wait until a standby has flushed it
    /// (`synchronous_standby_names = '*'`).
    pub fn synchronous(&self) {
        self.sql(
            "postgres",
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
        );
        self.sql("postgres", "SELECT pg_reload_conf()");
    }

    /// The connection string of the default database.
    pub fn conninfo(&self) -> String {
        self.conninfo_db("postgres")
    }

    /// The same as a URI (`postgresql://user:password@/db?host=…`).
    pub fn uri(&self) -> String {
        format!(
            "postgresql://postgres:{PASSWORD}@/postgres?host={}&port={}",
            self.socket.display(),
            self.port
        )
    }

    /// A new, empty database; its connection string.
    pub fn fresh_db(&self) -> String {
        let name = format!("t{}", COUNTER.fetch_add(1, Ordering::Relaxed));
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        self.conninfo_db(&name)
    }

    /// Runs SQL through psql; its output (unaligned, tuples only).
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let mut cmd = self.tool("psql");
        cmd.env("PGPASSWORD", PASSWORD)
            .arg("-h")
            .arg(&self.socket)
            .arg("-p")
            .arg(self.port.to_string())
            .args([
                "-U",
                "postgres",
                "-d",
                db,
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ]);
        String::from_utf8(run(&mut cmd, "psql").stdout).unwrap()
    }
}

/// A session id no other test uses.
pub fn session_id(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `path` is inside the cluster's folder (for tests that look at files).
pub fn inside(cluster: &Cluster, path: &Path) -> bool {
    path.starts_with(&cluster.root)
}

// --- The session the PostgreSQL tests write ---------------------------------------------------

pub const U2: &str = r#"{"id":"u-2","parentId":"meta-cwd","timestamp":7,"type":"message","message":{"role":"user","content":"再读 package.json，告诉我版本"}}"#;
pub const A_PKG: &str = r#"{"id":"a-pkg","parentId":"u-2","timestamp":8,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-2","name":"read","arguments":{"path":"package.json"}}]}}"#;
pub const R_PKG: &str = r#"{"id":"r-pkg","parentId":"a-pkg","timestamp":9,"type":"message","message":{"role":"toolResult","toolCallId":"call-2","toolName":"read","content":[{"type":"text","text":"{\"version\":\"0.1.0\"}"}],"isError":false}}"#;
pub const A_VER: &str = r#"{"id":"a-ver","parentId":"r-pkg","timestamp":10,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"版本是 0.1.0"}]}}"#;
pub const C1: &str = r#"{"id":"c-1","parentId":"a-ver","timestamp":11,"type":"compaction","summary":"User asked for the project name; it is tiny-pi.","firstKeptEntryId":"u-2","tokensBefore":1200}"#;
pub const U3: &str = r#"{"id":"u-3","parentId":"c-1","timestamp":12,"type":"message","message":{"role":"user","content":"还有什么依赖？"}}"#;
pub const LABEL: &str = r#"{"id":"l-1","parentId":"u-3","timestamp":13,"type":"metadata","key":"session.label","value":{"targetId":"a-alt","label":"alt"}}"#;
/// Key order and escapes that a jsonb column would not keep.
pub const ODD: &str = r#"{"timestamp":14,"type":"metadata","parentId":"l-1","id":"odd","key":"z","value":{"b":1,"a":"\ud83d \u0000","a2":1.50}}"#;

/// The chapter's tree and more: a compaction, a label, Chinese text, and key order and
/// escapes that a `jsonb` column would not keep.
pub fn example() -> Vec<&'static str> {
    let mut lines = super::CHAPTER.to_vec();
    lines.extend([U2, A_PKG, R_PKG, A_VER, C1, U3, LABEL, ODD]);
    lines
}
