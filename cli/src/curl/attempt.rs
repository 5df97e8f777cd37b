//! One transfer's attempts: each goes through [`Session::bounded_transfer`]; curl's `--retry`
//! rules decide whether another follows ([`super::retry`]); after the last, the output file's
//! metadata (`-R`, `--xattr`), the `-#` bar's line end and `-w`.
//!
//! What this does not do: plan the transfer (its URL, output and upload: [`super::plan`]) or
//! send anything itself.

use super::exit::CurlError;
use super::plan::Planned;
use super::record::TransferRecord;
use super::request::RequestTemplate;
use super::retry::Retry;
use super::sink::Sink;
use super::write_out::Stream;
use super::{Session, file_meta, output};

impl Session {
    /// [`run_one`](Self::run_one) once the transfer's template is made.
    pub(super) async fn run_planned(
        &self,
        planned: &Planned,
        url: &str,
        template: &RequestTemplate,
        mut sink: Sink,
        slot: Option<usize>,
    ) -> u8 {
        let url = url.to_owned();
        if let Some(file) = &self.args.transfer.etag_save {
            // Each transfer starts its tags afresh; run_all checked that the file can be made.
            let _ = file_meta::start_etag_file(file);
        }
        // Without a file, curl's cache lives as long as the transfer's handle.
        if let Some(alt_svc) = self.alt_svc.as_ref().filter(|c| c.path().is_empty()) {
            alt_svc.clear();
        }
        self.attempts(planned, &url, template, &mut sink, slot)
            .await
    }

    /// The attempts of one transfer (`--retry`), then its `-w`; the last attempt's exit code.
    async fn attempts(
        &self,
        planned: &Planned,
        url: &str,
        template: &RequestTemplate,
        sink: &mut Sink,
        slot: Option<usize>,
    ) -> u8 {
        let mut retry = Retry::new(&self.args.transfer);
        let mut progress = self.progress_for(sink, slot);
        loop {
            let mut record = TransferRecord::start(url, template.method_for(&template.first_hop()));
            record.input_url = planned.url.clone();
            record.url_num = planned.index;
            record.output_file = sink.path().map(|p| p.to_path_buf());
            let result = self
                .bounded_transfer(template, url, sink, &mut record, &mut progress)
                .await;
            record.finished_at = Some(record.elapsed());
            // --no-clobber or -J may have taken another name.
            record.output_file = sink.effective_name();
            let code = result.as_ref().err().map_or(0, CurlError::code);
            // curl reports each attempt's failure, then decides whether to try again.
            if let Err(error) = &result {
                self.report.error(error);
            }
            match retry.next(&self.args.transfer, code, &record) {
                Ok(again) => {
                    self.report
                        .warning_raw(&output::curl_warning(&again.warning));
                    if sink.path().is_some() && sink.written() > 0 {
                        self.report
                            .warning_raw(&format!("Throwing away {} bytes", sink.written()));
                    }
                    sink.reset();
                    tokio::time::sleep(again.delay).await;
                    continue;
                }
                Err(Some(why)) => self.report.warning_raw(&output::curl_warning(why)),
                Err(None) => {}
            }
            // curl ends `-#`'s line here: after the error, with no retry to come.
            progress.end_line();
            if let Err(error) = &result {
                if self.args.transfer.remove_on_error {
                    sink.remove();
                }
                record.exit_code = error.code();
                record.error = Some(error.message().to_owned());
            }
            if let (Ok(()), true, Some(path)) =
                (&result, self.args.transfer.remote_time, sink.path())
            {
                file_meta::set_remote_time(path, &record.headers);
            }
            if let (Ok(()), true, Some(path)) = (&result, self.args.transfer.xattr, sink.path()) {
                if let Err(e) = file_meta::set_xattrs(path, url, &record.headers) {
                    self.report.warning_raw(&format!(
                        "Warning: Error setting extended attributes on '{}': {e}",
                        path.display()
                    ));
                }
            }
            let mut code = code;
            if let Err(error) = self.print_write_out(&record) {
                self.report.error(&error);
                code = error.code();
            }
            return code;
        }
    }

    /// Prints `-w` for a finished transfer.
    pub(super) fn print_write_out(&self, record: &TransferRecord) -> Result<(), CurlError> {
        let Some(write_out) = &self.write_out else {
            return Ok(());
        };
        let (pieces, unknown) = write_out.render_streams(record);
        for name in unknown {
            // curl warns even with -s, and on the process's stderr even under `--stderr`.
            eprintln!("poolcurl: unknown --write-out variable: '{name}'");
        }
        for (stream, text) in pieces {
            match stream {
                Stream::Stdout => {
                    let mut stdout = Sink::stdout();
                    stdout.write(text.as_bytes())?;
                    stdout.finish()?;
                }
                // The process's stderr even under `--stderr`, as curl 7.88 writes it.
                Stream::Stderr => {
                    use std::io::Write as _;
                    let _ = std::io::stderr().lock().write_all(text.as_bytes());
                }
            }
        }
        Ok(())
    }
}
