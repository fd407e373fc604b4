use serde_json::json;

use super::*;

/// Every credential of [`config`].
const SECRETS: [&str; 13] = [
    "pw-Secret1",
    "QK-1111",
    "sk-sse-0000",
    "AT-2222",
    "sk-ARG-3333",
    "TOK-4444",
    "ghp-5555",
    "BR-6666",
    "UP-7777",
    "SG-8888",
    "env-9999",
    "hdr-1111",
    "bearer-1212",
];

/// A configuration with a credential in every place one goes.
fn config() -> Value {
    json!({
        "sse_servers": [{
            "url": "https://alice:pw-Secret1@mcp.example/sse?apikey=QK-1111&region=eu",
            "api_key": "sk-sse-0000",
        }],
        "shttp_servers": [{"url": "https://mcp.example/mcp?access_token=AT-2222", "timeout": 30}],
        "stdio_servers": [{
            "name": "gh",
            "command": "npx",
            "args": ["-y", "server", "--api-key", "sk-ARG-3333", "--token=TOK-4444", "-e",
                     "GITHUB_TOKEN=ghp-5555", "--header", "Authorization: Bearer BR-6666",
                     "https://u:UP-7777@h.example/x?sig=SG-8888", "--verbose", "--port", "8080"],
            "env": {"API_KEY": "env-9999", "MODE": "fast"},
        }],
        "mcpServers": {"remote": {
            "url": "https://h2.example/sse?region=eu",
            "headers": {"X-Api-Key": "hdr-1111"},
            "auth": "bearer-1212",
            "transport": "sse",
            "use_auth": true,
        }},
    })
}

#[test]
fn every_credential_is_masked_and_every_server_still_named() {
    let masked = mask_mcp(&config());
    let text = masked.to_string();
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(
        masked["sse_servers"][0],
        json!({"url": "https://**********@mcp.example/sse?apikey=**********&region=eu",
               "api_key": null})
    );
    assert_eq!(
        masked["shttp_servers"][0]["url"],
        "https://mcp.example/mcp?access_token=**********"
    );
    assert_eq!(masked["shttp_servers"][0]["timeout"], 30);
    let stdio = &masked["stdio_servers"][0];
    assert_eq!(
        stdio["args"],
        json!([
            "-y",
            "server",
            "--api-key",
            "**********",
            "--token=**********",
            "-e",
            "GITHUB_TOKEN=**********",
            "--header",
            "Authorization: **********",
            "https://**********@h.example/x?sig=**********",
            "--verbose",
            "--port",
            "8080"
        ])
    );
    assert_eq!(stdio["env"], json!({"API_KEY": null, "MODE": null}));
    assert_eq!(
        (&stdio["name"], &stdio["command"]),
        (&json!("gh"), &json!("npx"))
    );
    let remote = &masked["mcpServers"]["remote"];
    assert_eq!(remote["url"], "https://h2.example/sse?region=eu");
    assert_eq!(remote["headers"], json!({"X-Api-Key": null}));
    assert_eq!(remote["auth"], Value::Null);
    assert_eq!(
        (&remote["transport"], &remote["use_auth"]),
        (&json!("sse"), &json!(true))
    );
}

#[test]
fn flags_that_do_not_look_secret_are_left_alone() {
    let args = json!({"args": ["-k", "v1", "--api-key", "--verbose", "--url=https://h/x",
                               "--token=", "--port", "80", "--secret-file", "-abc"]});
    assert_eq!(
        mask_mcp(&args)["args"],
        json!([
            "-k",
            "v1",
            "--api-key",
            "--verbose",
            "--url=https://h/x",
            "--token=",
            "--port",
            "80",
            "--secret-file",
            "**********"
        ])
    );
}

#[test]
fn sending_back_what_was_shown_keeps_every_credential() {
    let stored = config();
    assert_eq!(keep_masked(&mask_mcp(&stored), &stored), stored);
    assert_eq!(keep_masked(&stored, &stored), stored);
}

#[test]
fn edits_around_masked_values_keep_them() {
    let stored = config();
    let mut sent = mask_mcp(&stored);
    // A new server first, the timeout changed, an argument inserted, a header and an env
    // value added, the MODE value set again.
    sent["shttp_servers"].as_array_mut().unwrap().insert(
        0,
        json!({"url": "https://new.example/mcp", "api_key": "new-key"}),
    );
    sent["shttp_servers"][1]["timeout"] = json!(60);
    sent["stdio_servers"][0]["args"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!("--quiet"));
    sent["stdio_servers"][0]["env"]["MODE"] = json!("slow");
    sent["mcpServers"]["remote"]["headers"]["X-Other"] = json!("other-1");
    let kept = keep_masked(&sent, &stored);
    assert_eq!(kept["shttp_servers"][0]["api_key"], "new-key");
    assert_eq!(
        kept["shttp_servers"][1],
        json!({"url": "https://mcp.example/mcp?access_token=AT-2222", "timeout": 60})
    );
    let mut args = stored["stdio_servers"][0]["args"]
        .as_array()
        .unwrap()
        .clone();
    args.insert(0, json!("--quiet"));
    assert_eq!(kept["stdio_servers"][0]["args"], Value::Array(args));
    assert_eq!(
        kept["stdio_servers"][0]["env"],
        json!({"API_KEY": "env-9999", "MODE": "slow"})
    );
    assert_eq!(
        kept["mcpServers"]["remote"]["headers"],
        json!({"X-Api-Key": "hdr-1111", "X-Other": "other-1"})
    );
    assert_eq!(kept["sse_servers"], stored["sse_servers"]);
    // Reordered servers are paired by what they are, not where they are.
    let two = json!({"sse_servers": [{"url": "https://a.example/s", "api_key": "ka-0001"},
                                     {"url": "https://b.example/s", "api_key": "kb-0002"}]});
    let mut sent = mask_mcp(&two);
    sent["sse_servers"].as_array_mut().unwrap().reverse();
    let kept = keep_masked(&sent, &two);
    assert_eq!(kept["sse_servers"][0]["api_key"], "kb-0002");
    assert_eq!(kept["sse_servers"][1]["api_key"], "ka-0001");
}

#[test]
fn a_credential_never_moves_to_another_server_or_flag() {
    let stored = config();
    let mut sent = mask_mcp(&stored);
    // The server's address changed: its masked key is not given to the new one.
    sent["sse_servers"][0]["url"] = json!("https://evil.example/sse");
    sent["mcpServers"]["remote"]["url"] = json!("https://evil.example/r");
    // The masked argument now follows another flag; the command changed elsewhere.
    let args = sent["stdio_servers"][0]["args"].as_array_mut().unwrap();
    args[2] = json!("--log-to");
    let kept = keep_masked(&sent, &stored);
    assert_eq!(kept["sse_servers"][0]["api_key"], Value::Null);
    assert_eq!(
        kept["mcpServers"]["remote"]["headers"],
        json!({"X-Api-Key": null})
    );
    assert_eq!(kept["stdio_servers"][0]["args"][3], MASK);
    assert_eq!(kept["stdio_servers"][0]["args"][4], "--token=TOK-4444");
    let mut renamed = mask_mcp(&stored);
    renamed["stdio_servers"][0]["command"] = json!("uvx");
    let kept = keep_masked(&renamed, &stored);
    assert_eq!(kept["stdio_servers"][0]["env"]["API_KEY"], Value::Null);
    // A key sent anew replaces the stored one; a header left out is gone.
    let mut sent = mask_mcp(&stored);
    sent["sse_servers"][0]["api_key"] = json!("sk-new-1");
    sent["mcpServers"]["remote"]["headers"] = json!({});
    let kept = keep_masked(&sent, &stored);
    assert_eq!(kept["sse_servers"][0]["api_key"], "sk-new-1");
    assert_eq!(kept["mcpServers"]["remote"]["headers"], json!({}));
}

#[test]
fn the_secret_values_are_every_hidden_part() {
    let values = mcp_secret_values(&config());
    for secret in SECRETS {
        assert!(
            values
                .iter()
                .any(|v| v == secret || v == &format!("Bearer {secret}")),
            "{secret} not in {values:?}"
        );
    }
    assert!(values.contains(&"alice:pw-Secret1".to_owned()));
    assert!(!values.iter().any(|v| v.contains("example")));
    let text = config().to_string();
    let redacted = crate::identity::redaction::redact(&text, &values);
    for secret in SECRETS {
        assert!(!redacted.contains(secret), "{secret} in {redacted}");
    }
}
