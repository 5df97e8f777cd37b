//! Parity cases: -F's grammar, --xattr, cookie order.

use crate::{Case, case, with_stdin};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // A form curl cannot make fails the first transfer as it starts, -w written (with
        // curl's default GET), and no other transfer runs.
        case(
            "form file that does not open",
            &[
                "-F",
                "a=@%DIR%/none.txt",
                "-w",
                "%{exitcode} %{method}\\n",
                "%BASE%/echo",
                "%BASE%/echo",
            ],
        ),
        case(
            "form encoder curl does not know",
            &[
                "-F",
                "a=x;encoder=bogus",
                "-w",
                "%{exitcode}",
                "%BASE%/echo",
            ],
        ),
        // -F's grammar as curl reads it: names and file names escaped (percent by default,
        // backslashes with --form-escape), quoted words, type parameters, unknown modifiers
        // skipped, headers inline and from a file, encoders, several files in one field,
        // standard input, nested parts, and a type that is no type.
        case(
            "form escapes names",
            &[
                "-F",
                "a\"b=1",
                "-F",
                "up=@%DIR%/../upload.txt;filename=x\"y.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form-escape",
            &[
                "--form-escape",
                "-F",
                "a\"b\\c=1",
                "-F",
                "up=@%DIR%/../upload.txt;filename=x\"y.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form quoted words",
            &[
                "-F",
                "up=@\"%DIR%/../upload.txt\";filename=\"a,b;c \\\"d\\\".txt\"",
                "-F",
                "t=\"quoted;value\"",
                "%BASE%/echo",
            ],
        ),
        case(
            "form type parameters and unknown modifiers",
            &[
                "-F",
                "up=@%DIR%/../upload.txt;type=text/plain;charset=utf-8",
                "-F",
                "a=x;y",
                "-F",
                "b= spaced ;type=text/x-b",
                "%BASE%/echo",
            ],
        ),
        case(
            "form headers",
            &[
                "-F",
                "a=1;headers=\"X-One: 1\"",
                "-F",
                "b=2;headers=@%DIR%/../form-headers.txt",
                "-F",
                "c=3;headers=Content-Type: text/x-c",
                "%BASE%/echo",
            ],
        ),
        case(
            "form encoders",
            &[
                "-F",
                "a=hello there;encoder=base64",
                "-F",
                "b=bin;encoder=binary",
                "-F",
                "c=eight;encoder=8bit",
                "-F",
                "d=seven;encoder=7bit",
                "%BASE%/echo",
            ],
        ),
        case(
            "form quoted-printable",
            &[
                "-F",
                "q=\"a=b caf\u{e9} and a long line that goes on and on past the seventy-six characters a line may hold\r\nnext\tline \r\nlone\nlf\";encoder=quoted-printable",
                "%BASE%/echo-body",
            ],
        ),
        case(
            "form several files",
            &[
                "-F",
                "up=@%DIR%/../upload.txt,%DIR%/../data.json;type=text/x-j",
                "%BASE%/echo",
            ],
        ),
        case("form stdin", &["-F", "up=@-", "-F", "v=<-", "%BASE%/echo"]),
        case(
            "form text from a file",
            &[
                "-F",
                "v=<%DIR%/../upload.txt",
                "-F",
                "w=text;filename=named.html",
                "%BASE%/echo",
            ],
        ),
        case(
            "form 8-bit data in 7bit",
            &["-F", "d=caf\u{e9};encoder=7bit", "%BASE%/echo"],
        ),
        case(
            "form file types",
            &[
                "-F",
                "j=@%DIR%/../data.json",
                "-F",
                "h=@%DIR%/../form-headers.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form nested parts",
            &[
                "-F",
                "n=(;type=multipart/alternative",
                "-F",
                "=plain",
                "-F",
                "= <b>html</b>;type=text/html",
                "-F",
                "=)",
                "-F",
                "after=1",
                "%BASE%/echo",
            ],
        ),
        case("form bad type", &["-F", "a=1;type=bogus", "%BASE%/echo"]),
        // A -H Content-Type names the form's type; curl adds the boundary to it, and the
        // parts are attachments unless it is multipart/form-data.
        case(
            "form with -H content-type form-data",
            &[
                "-F",
                "a=1",
                "-F",
                "up=@%DIR%/../upload.txt",
                "-H",
                "Content-Type: multipart/form-data",
                "%BASE%/echo",
            ],
        ),
        case(
            "form with -H content-type related",
            &[
                "-F",
                "a=1",
                "-H",
                "content-type:  multipart/related; type=\"application/json\"",
                "%BASE%/echo",
            ],
        ),
        case(
            "form with -H content-type removed",
            &["-F", "a=1", "-H", "Content-Type:", "%BASE%/echo"],
        ),
        case(
            "form bad encoder",
            &["-F", "a=1;encoder=rot13", "%BASE%/echo"],
        ),
        case("cookie string", &["-b", "a=1; b=2", "%BASE%/echo"]),
        case("cookie strings", &["-b", "a=1", "-b", "b=2", "%BASE%/echo"]),
        case(
            "cookie engine",
            &["-c", "%DIR%/jar.txt", "-L", "%BASE%/setcookie"],
        ),
        // A jar that cannot be written fails nothing (curl notes it under -v only).
        case(
            "cookie jar in a directory that does not exist",
            &["-c", "%DIR%/missing/jar.txt", "-L", "%BASE%/setcookie"],
        ),
        // --xattr: the effective URL without credentials and the Content-Type, in the output
        // file's extended attributes (compared with the files).
        case(
            "xattr",
            &[
                "--xattr",
                "-L",
                "-o",
                "%DIR%/moved.txt",
                "http://user:secret@127.0.0.1:%PORT%/redirect",
                "--xattr",
                "-o",
                "%DIR%/untyped.txt",
                "%BASE%/",
            ],
        ),
        // A cookie that replaces another keeps its creation: the jar lists the newest first
        // and requests send, among equal lengths, the newest first.
        case(
            "cookie order",
            &[
                "-c",
                "%DIR%/jar.txt",
                "%BASE%/cookies",
                "%BASE%/cookies2",
                "%BASE%/echo",
            ],
        ),
        // -b @FILE is a file whatever it holds, -b - reads the jar from stdin.
        case(
            "cookie file named with @",
            &["-b", "@../jar.txt", "%BASE%/echo"],
        ),
        with_stdin(
            "cookie file from stdin",
            "127.0.0.1\tFALSE\t/\tFALSE\t0\tpiped\t1\n",
            &["-b", "-", "%BASE%/echo"],
        ),
        case(
            "cookie with an address for its domain",
            &["-c", "%DIR%/jar.txt", "%BASE%/ip-domain", "%BASE%/echo"],
        ),
        // A jar line is written back as it was read, even one that gives an address
        // subdomains.
        with_stdin(
            "jar line with an address for a domain",
            ".127.0.0.1\tTRUE\t/\tFALSE\t0\twide\t1\n",
            &["-b", "-", "-c", "%DIR%/jar.txt", "%BASE%/echo"],
        ),
    ]
}
