//! `completions` and `man`: generated from the same clap definitions as `--help`
//! (clap_complete, clap_mangen), so they never disagree with it.

use std::io::Write;
use std::process::ExitCode;

use crate::args::definition;
use crate::output::{Out, Outcome};

pub fn completions(out: &mut Out, shell: clap_complete::Shell) -> Outcome {
    let mut command = definition();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "session", &mut script);
    out.write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(out: &mut Out) -> Outcome {
    let mut page = Vec::new();
    clap_mangen::Man::new(definition()).render(&mut page)?;
    // The subcommands' own pages are not separate files: each verb's section follows.
    for verb in definition().get_subcommands() {
        let name = format!("session-{}", verb.get_name());
        let verb = verb.clone().bin_name(name.clone());
        let mut section = Vec::new();
        clap_mangen::Man::new(verb)
            .title(name.to_uppercase())
            .render(&mut section)?;
        page.extend_from_slice(&section);
    }
    out.write_all(&page)?;
    Ok(ExitCode::SUCCESS)
}
