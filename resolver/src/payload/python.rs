//! Python payloads: uv resolves the closure (`uv pip compile --format pylock.toml
//! --only-binary :all:`, as for the agent package), berth fetches every wheel, checks its
//! sha256 and keeps the wheels as `wheels/` of a store entry; the runtime builds the
//! environment from them offline.

use berth_lockfile_schema::LockedWheel;
use berth_lockfile_schema::runner::PayloadWant;
use berth_store::Staging;
use berth_uv::Uv;

use super::{NotLocked, Staged};
use crate::agent::{Index, compile, fetch_wheel, index, read_wheel_meta, wheels_of};
use crate::context::Env;
use crate::error::ResolveError;

/// Resolves a Python runner line with uv and stages its wheels.
pub(super) fn lock_python(env: &Env<'_>, want: &PayloadWant) -> Result<Staged, NotLocked> {
    let call = &want.call;
    // Without uv berth cannot resolve the line: it is left as written.
    let uv = Uv::find().map_err(|e| NotLocked::Left(e.to_string()))?;
    let python = uv.find_python(None).map_err(ResolveError::from)?;
    let index = index(env)?;
    let work = env.store.stage()?;
    let requirement = format!("{}{}", call.package, call.requirement);
    let packages = compile(env, (&uv, &python, &index), &requirement, work.path())?;
    let mut wheels = wheels_of(packages, None, &python)?;
    wheels.sort_by(|a, b| (&a.name, &a.file).cmp(&(&b.name, &b.file)));
    let own = wheels
        .iter()
        .find(|w| w.name == call.package)
        .cloned()
        .ok_or_else(|| NotLocked::Left(format!("uv's resolution has no `{}`", call.package)))?;
    let staging = assemble_wheels(env, &wheels, &index)?;
    let meta = read_wheel_meta(&staging.path().join("wheels").join(&own.file))?;
    let names: Vec<&str> = meta.scripts.iter().map(|e| e.name.as_str()).collect();
    // uvx runs the script named as the line names the package (or `--from`'s program).
    let written = call.program.clone().unwrap_or_else(|| {
        let spec = call.spec.as_str();
        let end = spec
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(spec.len());
        spec[..end].to_owned()
    });
    let entry = names
        .iter()
        .find(|n| **n == written)
        .or_else(|| {
            names.iter().find(|n| {
                berth_lockfile_schema::normalize_package_name(n)
                    == berth_lockfile_schema::normalize_package_name(&written)
            })
        })
        .or(if names.len() == 1 {
            names.first()
        } else {
            None
        })
        .map(|n| (*n).to_owned())
        .ok_or_else(|| {
            NotLocked::Left(format!(
                "`{}` has no console script `{written}` (it has: {})",
                call.package,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        })?;
    Ok(Staged {
        version: own.version.clone(),
        registry: index.recorded(),
        entry,
        python_version: Some(python.minor_version()),
        npm: Vec::new(),
        wheels,
        registry_keys: Vec::new(),
        staging,
    })
}

/// Fetches every wheel of a closure into `wheels/` of a new staging folder, each
/// checked against its sha256 (with `index`'s credentials for a wheel on its host).
pub(super) fn assemble_wheels(
    env: &Env<'_>,
    wheels: &[LockedWheel],
    index: &Index,
) -> Result<Staging, NotLocked> {
    let closure = env.store.stage()?;
    let dir = closure.path().join("wheels");
    fs_err::create_dir(&dir)?;
    for wheel in wheels {
        let (download, path, sha256) = fetch_wheel(env, wheel, index)?;
        if sha256 != wheel.sha256 {
            return Err(ResolveError::WheelMismatch {
                file: wheel.file.to_string(),
                url: wheel.url.clone().unwrap_or_default(),
                expected: wheel.sha256.clone(),
                actual: sha256,
            }
            .into());
        }
        fs_err::rename(&path, dir.join(&wheel.file))?;
        drop(download);
    }
    Ok(closure)
}
