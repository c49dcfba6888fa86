//! A `PLUGIN@MARKETPLACE` request turned into the plain request its catalog entry stands
//! for, and that request pinned.

use berth_lockfile_schema::marketplace::{DependencySpec, EntrySource, MarketplaceRequest};
use berth_lockfile_schema::{EntryDefinition, PluginRequest, Source, SourceKind};
use berth_transport::integrity::Integrity;

use super::ReadMarketplace;
use crate::context::Env;
use crate::error::ResolveError;
use crate::sources::archive::ArchiveSource;
use crate::sources::local::{existing_dir, local_dir};
use crate::sources::npm::{DEFAULT_REGISTRY, pick_from_registry};
use crate::sources::{PluginSource, Resolved, resolve_new};

/// The plain request a `PLUGIN@MARKETPLACE` entry stands for, and for an npm package the
/// integrity its tarball must have.
pub(crate) struct Derived {
    pub(crate) request: PluginRequest,
    pub(crate) npm: Option<NpmPlugin>,
    /// The marketplace it comes from.
    pub(crate) marketplace: String,
    /// The entry's `version`.
    pub(crate) version: Option<String>,
    /// The entry's `dependencies`.
    pub(crate) dependencies: Vec<DependencySpec>,
    /// What the entry defines of the plugin (`strict: false`, component fields).
    pub(crate) definition: Option<EntryDefinition>,
    /// The entry's name: the plugin's name when the entry alone defines it.
    pub(crate) entry_name: String,
}

/// An npm package taken as a plugin source: what its registry says of the version picked.
pub(crate) struct NpmPlugin {
    /// As the lock records it, its signature not yet chosen.
    pub(crate) source: berth_lockfile_schema::NpmSource,
    /// What the tarball must hash to: the strongest hash of `source.integrity`.
    pub(crate) integrity: Integrity,
    /// The registry asked.
    pub(crate) registry: String,
    /// Its `dist.signatures`.
    pub(crate) signatures: Vec<berth_lockfile_schema::NpmSignature>,
}

/// The request `pick` (a `PLUGIN@MARKETPLACE` request of `read`) stands for, with the
/// manifest's `hash` and `name` pins carried over. An npm entry asks its registry.
pub(crate) fn derive(
    env: &Env<'_>,
    read: &ReadMarketplace,
    declared: &MarketplaceRequest,
    pick: &PluginRequest,
) -> Result<Derived, ResolveError> {
    let Source::Marketplace { plugin, .. } = pick.parsed_source() else {
        unreachable!("only called for marketplace picks");
    };
    let entry = read
        .catalog
        .entry(&declared.name, plugin)
        .map_err(|message| ResolveError::Marketplace { message })?;
    let (mut request, npm) = match &entry.source {
        Ok(EntrySource::Npm {
            package,
            version,
            registry,
        }) => npm_request(env, package, version.as_deref(), registry.as_deref())?,
        _ => {
            let rev = read.locked.git.as_ref().map(|(_, rev)| rev.to_string());
            let request = entry
                .request(declared, rev.as_deref())
                .map_err(|message| ResolveError::Marketplace { message })?;
            (request, None)
        }
    };
    // A catalog names local folders only inside a local marketplace (the schema refuses
    // every other path); here symlinks are followed to check where they lead.
    if request.parsed_source().kind() == SourceKind::Local {
        inside_marketplace(env, declared, &entry.name, &request)?;
    }
    check_source(env, read, &request)?;
    if !entry.inline_components.is_empty() {
        env.reporter.warn(&format!(
            "marketplace `{}`, plugin `{}`: its entry defines {}, which berth does not apply",
            declared.name,
            entry.name,
            entry
                .inline_components
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    request.hash = pick.hash;
    request.name = pick.name.clone();
    request.line = pick.line;
    Ok(Derived {
        request,
        npm,
        marketplace: declared.name.clone(),
        version: entry.version.clone(),
        dependencies: entry.dependencies.clone(),
        definition: entry.definition.clone().unwrap_or_default(),
        entry_name: entry.name.clone(),
    })
}

/// The plain request a standalone skill of `read`'s catalog stands for: its folder in the
/// marketplace at the pinned commit (or inside a local marketplace, symlinks followed), or
/// the remote source it names.
pub(crate) fn derive_skill(
    env: &Env<'_>,
    read: &ReadMarketplace,
    declared: &MarketplaceRequest,
    entry: &berth_lockfile_schema::marketplace::CatalogEntry,
) -> Result<PluginRequest, ResolveError> {
    let rev = read.locked.git.as_ref().map(|(_, rev)| rev.to_string());
    let request =
        entry
            .request(declared, rev.as_deref())
            .map_err(|message| ResolveError::Marketplace {
                message: message.replacen(", plugin `", ", skill `", 1),
            })?;
    if request.parsed_source().kind() == SourceKind::Local {
        inside_marketplace(env, declared, &entry.name, &request)?;
    }
    check_source(env, read, &request)?;
    Ok(request)
}

/// Refuses what an entry of `read` stands for when the policy's `[sources]` lets neither
/// its source nor the marketplace's through, before it is fetched (an npm entry's
/// registry was asked which tarball it is; the tarball is not fetched).
fn check_source(
    env: &Env<'_>,
    read: &ReadMarketplace,
    request: &PluginRequest,
) -> Result<(), ResolveError> {
    env.settings.sources.check_plugin(
        &request.display_source(),
        Some((&read.locked.name, &read.locked.source)),
    )
}

/// The request an npm entry stands for: the tarball of the version its registry picks,
/// and the integrity that tarball must have.
fn npm_request(
    env: &Env<'_>,
    package: &str,
    version: Option<&str>,
    registry: Option<&str>,
) -> Result<(PluginRequest, Option<NpmPlugin>), ResolveError> {
    let npm = pick_from_registry(env, package, version, registry)?;
    let request =
        PluginRequest::new(&npm.tarball, None, None, None).map_err(|e| ResolveError::Npm {
            package: package.to_owned(),
            message: format!("its tarball URL cannot be fetched: {e}"),
        })?;
    if request.parsed_source().kind() != SourceKind::Archive {
        return Err(ResolveError::Npm {
            package: package.to_owned(),
            message: format!("`{}` is not a tarball URL", npm.tarball),
        });
    }
    Ok((
        request,
        Some(NpmPlugin {
            source: npm.source,
            integrity: npm.integrity,
            registry: registry.unwrap_or(DEFAULT_REGISTRY).to_owned(),
            signatures: npm.signatures,
        }),
    ))
}

/// Refuses a local marketplace's entry whose folder, symlinks followed, is not inside the
/// marketplace's own folder.
fn inside_marketplace(
    env: &Env<'_>,
    declared: &MarketplaceRequest,
    plugin: &str,
    request: &PluginRequest,
) -> Result<(), ResolveError> {
    let (Source::Local { path: base }, Source::Local { path }) =
        (declared.parsed_source(), request.parsed_source())
    else {
        return Err(ResolveError::Marketplace {
            message: format!(
                "marketplace `{}`, plugin `{plugin}`: its source `{}` is a path on this machine; only a marketplace that is itself a local folder may name folders, inside it",
                declared.name,
                request.display_source()
            ),
        });
    };
    let base = existing_dir(&local_dir(base, env.settings))?;
    let written = local_dir(path, env.settings);
    let real = existing_dir(&written)?;
    if !real.starts_with(&base) {
        return Err(ResolveError::Marketplace {
            message: format!(
                "marketplace `{}`, plugin `{plugin}`: its folder `{}` leads out of the marketplace's folder `{}` (to `{}`) through a symlink; a marketplace may name only folders inside it",
                declared.name,
                written.display(),
                base.display(),
                real.display()
            ),
        });
    }
    Ok(())
}

/// Locks what [`derive`] gave: an npm tarball checked against its integrity before it is
/// unpacked, anything else as a plain request.
pub(crate) fn resolve_derived(env: &Env<'_>, derived: &Derived) -> Result<Resolved, ResolveError> {
    match &derived.npm {
        Some(npm) => {
            let Source::Archive { url, format } = derived.request.parsed_source() else {
                unreachable!("an npm entry's request is its tarball (checked by `derive`)");
            };
            let package = format!("{}@{}", npm.source.package, npm.source.version);
            ArchiveSource::load(env, url, *format)?
                .with_integrity(&package, &npm.integrity)
                .lock(&derived.request, None)
        }
        None => resolve_new(env, &derived.request),
    }
}

impl Derived {
    /// Marks a plugin resolved for the `PLUGIN@MARKETPLACE` request `pick` with it, and
    /// fills in what it declares (see [`Derived::declare`]).
    pub(crate) fn mark(&self, mut resolved: Resolved, pick: &PluginRequest) -> Resolved {
        resolved.plugin.requested = Some(pick.display_source());
        self.declare(&mut resolved);
        resolved
    }

    /// Fills in what a marketplace plugin declares: its version and dependencies (its
    /// manifest's, then its catalog entry's, each in the entry's marketplace unless it
    /// names another) and what its entry defines of it.
    pub(crate) fn declare(&self, resolved: &mut Resolved) {
        let market = Some(self.marketplace.as_str());
        // An entry that alone defines its plugin names it, as Claude Code does.
        resolved.plugin.definition = self.definition.clone();
        if self.definition.as_ref().is_some_and(|d| !d.strict) {
            resolved.plugin.name = self.entry_name.clone();
        }
        resolved.plugin.plugin_version = resolved
            .declared
            .version
            .clone()
            .or_else(|| self.version.clone());
        let mut dependencies: Vec<DependencySpec> = Vec::new();
        for spec in resolved
            .declared
            .dependencies
            .iter()
            .chain(&self.dependencies)
        {
            let spec = spec.in_marketplace(market);
            if !dependencies.contains(&spec) {
                dependencies.push(spec);
            }
        }
        resolved.plugin.dependencies = dependencies;
    }
}
