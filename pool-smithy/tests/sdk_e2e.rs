//! A real generated SDK client (AWS SSO, the smallest service crate; built without default
//! features, so with no HTTP client or TLS stack of its own) sending operations to a loopback
//! endpoint through `pool-smithy`: the orchestrator, its interceptors (user agent, connection
//! poisoning, metrics), its retry strategy and its deserializer, with the pool underneath.

use std::time::Duration;

use aws_sdk_sso::config::retry::RetryConfig;
use aws_sdk_sso::config::{BehaviorVersion, Region};
use pool_smithy::PoolHttpClient;
use pool_tests::h1::{ConnPlan, RecordedRequest, Reply, ScriptedH1Server};

const CREDENTIALS: &str = r#"{"roleCredentials":{"accessKeyId":"AKIDEXAMPLE","secretAccessKey":"secret","sessionToken":"token","expiration":1700000000000}}"#;

fn credentials_reply(_: &RecordedRequest) -> Reply {
    Reply::ok(CREDENTIALS).header("content-type", "application/json")
}

fn sso(endpoint: &str, http_client: PoolHttpClient, retry: RetryConfig) -> aws_sdk_sso::Client {
    let config = aws_sdk_sso::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .retry_config(retry)
        .http_client(http_client)
        .build();
    aws_sdk_sso::Client::from_conf(config)
}

async fn get_role_credentials(client: &aws_sdk_sso::Client) -> Result<String, aws_sdk_sso::Error> {
    let output = client
        .get_role_credentials()
        .role_name("reader")
        .account_id("123456789012")
        .access_token("sso-token")
        .send()
        .await?;
    let credentials = output.role_credentials().expect("credentials");
    Ok(credentials.access_key_id().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn an_sdk_client_sends_operations_through_the_pool_and_reuses_its_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_with(credentials_reply)).await;
    let http_client = PoolHttpClient::builder()
        .native_roots(false)
        .build()
        .unwrap();
    let client = sso(
        &server.url(""),
        http_client.clone(),
        RetryConfig::disabled(),
    );

    for _ in 0..2 {
        assert_eq!(get_role_credentials(&client).await.unwrap(), "AKIDEXAMPLE");
    }

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "GET");
    assert!(
        first.target.starts_with("/federation/credentials?"),
        "{}",
        first.target
    );
    assert!(
        first.target.contains("role_name=reader"),
        "{}",
        first.target
    );
    assert!(first.target.contains("account_id=123456789012"));
    assert_eq!(first.header("x-amz-sso_bearer_token"), Some("sso-token"));
    let agent = first.header("x-amz-user-agent").unwrap_or_default();
    assert!(
        agent.contains("md/http#hyper-1.x"),
        "the SDK reports our connector metadata: {agent}"
    );
    assert_eq!(
        server.accepted(),
        1,
        "the second operation reused the connection"
    );
    assert_eq!(http_client.pool().counters().transparent_retries, 0);
}

#[tokio::test]
async fn the_sdk_retries_a_reset_connection_and_the_pool_does_not() {
    let server = ScriptedH1Server::builder()
        .plan(ConnPlan::new().read_request().reset())
        .default_plan(ConnPlan::serve_with(credentials_reply))
        .start()
        .await;
    let http_client = PoolHttpClient::new().unwrap();
    // The SDK's own backoff, shortened so the retry is not a second's wait.
    let retry = RetryConfig::standard()
        .with_max_attempts(2)
        .with_initial_backoff(Duration::from_millis(1));
    let client = sso(&server.url(""), http_client.clone(), retry);

    assert_eq!(get_role_credentials(&client).await.unwrap(), "AKIDEXAMPLE");
    assert_eq!(
        server.accepted(),
        2,
        "the retry went out on a new connection"
    );
    let requests = server.requests();
    let connections: Vec<u64> = requests.iter().map(|r| r.conn_id).collect();
    assert_eq!(
        connections,
        [0, 1],
        "the operation was sent once on each connection"
    );
    assert_eq!(requests[0].target, requests[1].target);
    assert_eq!(
        http_client.pool().counters().transparent_retries,
        0,
        "the retry was the SDK's, not the pool's"
    );
}
