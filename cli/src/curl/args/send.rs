//! The curl-mode flags that add to what a request carries beyond `-X -H -d` ([`SendArgs`]):
//! identity headers, credentials, other kinds of request data, uploads, ranges, cookies and
//! compression. What they become is built in [`crate::curl::request`], [`crate::curl::form`]
//! and [`crate::curl::cookies`].

use std::path::PathBuf;
use std::time::Duration;

use super::parse::{self, parse_seconds};

/// What else each request carries.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SendArgs {
    /// Send User-Agent NAME ("" sends none)
    #[arg(short = 'A', long = "user-agent", value_name = "NAME")]
    pub(crate) user_agent: Option<String>,

    /// Send PATH as the request target instead of the URL's path and query (* or /...; the URL still says where to connect)
    #[arg(long = "request-target", value_name = "PATH", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) request_target: Option<String>,

    /// Send Referer URL; "URL;auto" (or ";auto") also sets it when following redirects
    #[arg(short = 'e', long = "referer", value_name = "URL")]
    pub(crate) referer: Option<String>,

    /// Server user and password for Basic authentication (USER:PASSWORD; USER alone asks for the password)
    #[arg(short = 'u', long = "user", value_name = "USER:PASSWORD")]
    pub(crate) user: Option<String>,

    /// Take the user and password for each host from ~/.netrc (they win over the URL's)
    #[arg(short = 'n', long = "netrc")]
    pub(crate) netrc: bool,

    /// As -n, from FILE instead of ~/.netrc
    #[arg(long = "netrc-file", value_name = "FILE")]
    pub(crate) netrc_file: Option<String>,

    /// As -n, but a password in the URL wins over the file's
    #[arg(long = "netrc-optional")]
    pub(crate) netrc_optional: bool,

    /// Use HTTP Digest authentication with -u's (or the URL's) user and password
    #[arg(long = "digest", overrides_with_all = ["basic", "anyauth", "ntlm"])]
    pub(crate) digest: bool,

    /// Answer the server's challenge with Digest, or Basic when it offers only Basic
    #[arg(long = "anyauth", overrides_with_all = ["basic", "digest", "ntlm"])]
    pub(crate) anyauth: bool,

    /// Use NTLM authentication with -u's (or the URL's) user (DOMAIN\USER allowed) and password; requests go over HTTP/1.1
    #[arg(long = "ntlm", overrides_with_all = ["basic", "digest", "anyauth"])]
    pub(crate) ntlm: bool,

    /// Use Basic authentication (the default; cancels an earlier --digest, --anyauth or --ntlm)
    #[arg(long = "basic", overrides_with_all = ["digest", "anyauth", "ntlm"])]
    pub(crate) basic: bool,

    /// Sign requests with AWS Signature Version 4 as PROVIDER1:PROVIDER2:REGION:SERVICE (the later parts optional; e.g. aws:amz:us-east-1:s3), with -u as key:secret; wins over --digest and --oauth2-bearer
    #[arg(long = "aws-sigv4", value_name = "PROVIDER")]
    pub(crate) aws_sigv4: Option<String>,

    /// Send "Authorization: Bearer TOKEN" (wins over -u)
    #[arg(long = "oauth2-bearer", value_name = "TOKEN")]
    pub(crate) oauth2_bearer: Option<String>,

    /// Refuse (exit 67) a URL that carries a user name
    #[arg(long = "disallow-username-in-url")]
    pub(crate) disallow_username_in_url: bool,

    /// Add a piece to every URL's query, encoded as --data-urlencode encodes it ("+DATA": as given)
    #[arg(long = "url-query", value_name = "DATA")]
    pub(crate) url_query: Vec<String>,

    /// POST JSON data (repeatable, concatenated; @FILE reads a file): sets Content-Type and Accept to application/json
    #[arg(long = "json", value_name = "DATA")]
    pub(crate) json: Vec<String>,

    /// Send the data of -d/--data-urlencode/--json in the URL's query with a GET (HEAD with -I)
    #[arg(short = 'G', long = "get")]
    pub(crate) get: bool,

    /// POST data percent-encoded: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE
    #[arg(long = "data-urlencode", value_name = "DATA")]
    pub(crate) data_urlencode: Vec<String>,

    /// Multipart form field NAME=VALUE, NAME=@FILE (upload; @FILE,FILE for several), NAME=<FILE (contents) or NAME=( ... =) (nested); ";type=", ";filename=", ";headers=", ";encoder=" may follow
    #[arg(short = 'F', long = "form", value_name = "NAME=CONTENT")]
    pub(crate) form: Vec<String>,

    /// Multipart form field NAME=STRING taken literally (no @ or <)
    #[arg(long = "form-string", value_name = "NAME=STRING")]
    pub(crate) form_string: Vec<String>,

    /// Escape " and \ in -F names and file names with a backslash (default: " as %22)
    #[arg(long = "form-escape")]
    pub(crate) form_escape: bool,

    /// Upload FILE with PUT ("-" or "." is stdin, sent chunked); pairs with the URLs in order,
    /// as -o does, and "" uploads nothing; a URL ending in / gets the file name appended
    #[arg(short = 'T', long = "upload-file", value_name = "FILE")]
    pub(crate) upload_file: Vec<String>,

    /// Ask for a byte RANGE only (e.g. 0-99, 100-, -50)
    #[arg(short = 'r', long = "range", value_name = "RANGE")]
    pub(crate) range: Option<String>,

    /// Resume at byte OFFSET; "-" resumes after what the -o file already holds
    #[arg(
        short = 'C',
        long = "continue-at",
        value_name = "OFFSET",
        value_parser = parse::parse_continue_at
    )]
    pub(crate) continue_at: Option<String>,

    /// Send cookies: "NAME=VALUE; ..." as given, or read FILE (Netscape format or Set-Cookie lines); enables the cookie engine
    #[arg(short = 'b', long = "cookie", value_name = "DATA|FILE")]
    pub(crate) cookie: Vec<String>,

    /// Leave out the session cookies of the -b files (a new session)
    #[arg(short = 'j', long = "junk-session-cookies")]
    pub(crate) junk_session_cookies: bool,

    /// Write all cookies to FILE (Netscape format) after the transfers ("-" is stdout)
    #[arg(short = 'c', long = "cookie-jar", value_name = "FILE")]
    pub(crate) cookie_jar: Option<PathBuf>,

    /// Ask for a compressed response (deflate, gzip, br, zstd) and decompress it
    #[arg(long = "compressed")]
    pub(crate) compressed: bool,

    /// Ask for a compressed transfer coding (TE: gzip) and decompress it
    #[arg(long = "tr-encoding")]
    pub(crate) tr_encoding: bool,

    /// How long an upload waits for the server's 100 Continue before sending its body anyway (default 1)
    #[arg(long = "expect100-timeout", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) expect100_timeout: Option<Duration>,
}
