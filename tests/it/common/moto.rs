//! A real S3-compatible server for the tests: moto's standalone server from PyPI
//! (`moto[server]`, on 127.0.0.1; `.ci/run` installs it and sets `BERTH_MOTO_SERVER`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The credentials the tests give berth; none may appear in a file, log or response.
pub const KEY_ID: &str = "AKIABERTHTESTKEY0001";
pub const SECRET: &str = "berth-test-secret-5b1d0c7e9f";

/// A moto S3 server on a free port of 127.0.0.1, killed on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Moto {
    pub fn start() -> Option<Self> {
        let bin = std::env::var_os("BERTH_MOTO_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|d| d.join("moto_server"))
                        .find(|p| p.is_file())
                })
            })?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("addr")
            .port();
        let child = Command::new(bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let endpoint = format!("http://127.0.0.1:{port}");
        let client = reqwest::blocking::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while client.get(format!("{endpoint}/")).send().is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(Self { child, endpoint })
    }

    /// moto checks no signatures, only that a request is not anonymous (objects are
    /// private): the test acts on the bucket as another user, with a made-up signature.
    pub const AS_ADMIN: &str = "AWS4-HMAC-SHA256 Credential=AKIAMOTOADMIN/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00";

    pub fn create_bucket(&self, name: &str) {
        let response = reqwest::blocking::Client::new()
            .put(format!("{}/{name}", self.endpoint))
            .send()
            .expect("create bucket");
        assert!(response.status().is_success(), "{}", response.status());
    }

    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let text = reqwest::blocking::get(format!("{}/{bucket}?list-type=2", self.endpoint))
            .expect("list")
            .text()
            .expect("body");
        text.split("<Key>")
            .skip(1)
            .map(|s| s.split("</Key>").next().expect("key").to_owned())
            .collect()
    }

    pub fn put(&self, bucket: &str, key: &str, body: Vec<u8>) {
        let response = reqwest::blocking::Client::new()
            .put(format!("{}/{bucket}/{key}", self.endpoint))
            .header("authorization", Self::AS_ADMIN)
            .body(body)
            .send()
            .expect("put");
        assert!(response.status().is_success());
    }

    pub fn get(&self, bucket: &str, key: &str) -> Vec<u8> {
        reqwest::blocking::Client::new()
            .get(format!("{}/{bucket}/{key}", self.endpoint))
            .header("authorization", Self::AS_ADMIN)
            .send()
            .expect("get")
            .bytes()
            .expect("body")
            .to_vec()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
