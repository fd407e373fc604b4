//! HTTP through the proxy, streamed both ways: a 100 MiB download with flat memory, uploads,
//! limits and a sandbox that stops answering.

use super::*;

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

pub(crate) async fn http_streams_both_ways(backend: Backend) {
    let app = app(backend).await;
    let (_, session, url) = running(&app, &app.owner.key).await;
    let client = reqwest::Client::new();

    // A 100 MiB download, streamed: this process (the proxy runs in it) does not grow by it.
    let size: u64 = 100 << 20;
    let before = rss_kib();
    let mut peak = before;
    let res = client
        .get(format!("{url}/standin/blob/{size}"))
        .header("X-Session-API-Key", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "{backend}");
    assert_eq!(
        res.content_length(),
        Some(size),
        "{backend}: the length is kept"
    );
    let mut stream = res.bytes_stream();
    let mut got: u64 = 0;
    let mut chunks = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        assert!(chunk.iter().all(|b| *b == 0xAB));
        got += chunk.len() as u64;
        chunks += 1;
        if chunks.is_multiple_of(64) {
            peak = peak.max(rss_kib());
        }
    }
    assert_eq!(got, size, "{backend}");
    assert!(
        peak < before + 48 * 1024,
        "{backend}: memory grew from {before} KiB to {peak} KiB during a 100 MiB download"
    );

    // Uploads, streamed: with a length, and chunked (no length).
    let body: Vec<u8> = (0..(3 << 20)).map(|i| (i % 251) as u8).collect();
    let digest = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(&body))
    };
    let (status, echo) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(body.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(
        (&echo["body_length"], &echo["sha256"]),
        (&json!(body.len()), &json!(digest)),
        "{backend}"
    );
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(100_000).map(|c| Ok(c.to_vec())).collect();
    let (status, echo) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                chunks,
            )))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(echo["sha256"], json!(digest), "{backend}");

    // Over the body limit: 413 before the sandbox is called.
    let big = vec![b'x'; 5 << 20];
    let (status, body) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(big)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 413, "{backend}: {body}");

    // A sandbox that stops answering: 504 after the read timeout, and the proxy goes on.
    let began = Instant::now();
    let res = client
        .get(format!("{url}/standin/hang"))
        .header("X-Session-API-Key", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 504, "{backend}");
    assert!(began.elapsed() < Duration::from_secs(15), "{backend}");
    let (status, _) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::Session(&session),
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
