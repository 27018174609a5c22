//! The regions of an instrumented function: what the GPU lowering numbers its records
//! with, and the `regions` part of the [`ProfileMeta`](crate::ProfileMeta) it writes.

use crate::format::MAX_REGION_ID;
use crate::meta::{Region, RegionKind, SourceLoc};
use std::collections::HashMap;
use trident_ir::{Diagnostic, Function, Loc, Op, OpKind, SourceFile};

/// The regions of one function and the region id of each of its `record` ops.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionTable {
    /// One entry per distinct (name, kind), ids 0, 1, 2, ... in program order.
    pub regions: Vec<Region>,
    ids: HashMap<Op, u32>,
}

impl RegionTable {
    /// The region id a `record` op stores in its tag.
    pub fn id_of(&self, op: Op) -> Option<u32> {
        self.ids.get(&op).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}

/// The meta's kind for the IR's.
pub fn meta_kind(k: trident_ir::RegionKind) -> RegionKind {
    match k {
        trident_ir::RegionKind::Scope => RegionKind::Scope,
        trident_ir::RegionKind::Kernel => RegionKind::Kernel,
        trident_ir::RegionKind::Loop => RegionKind::Loop,
        trident_ir::RegionKind::Dot => RegionKind::Dot,
        trident_ir::RegionKind::Load => RegionKind::Load,
    }
}

/// Lists the regions of `f` (locations resolved through `files`, the module's source
/// files): records of the same name and kind are one region — a scope entered in
/// several places, a helper inlined twice, every iteration of a loop — as Proton
/// numbers its scopes by name. Ids follow the first record of each region in program
/// order (pre-order, as printed), so they are stable from one compilation to the next;
/// a region's location is that of its first start record with a known location (failing
/// that, of its first record with one).
pub fn regions_of(f: &Function, files: &[SourceFile]) -> Result<RegionTable, Diagnostic> {
    let mut table = RegionTable::default();
    let mut by_key: HashMap<(String, trident_ir::RegionKind), u32> = HashMap::new();
    // Whether a region's location came from a start record (an end's is only a fallback).
    let mut from_start: Vec<bool> = vec![];
    for op in f.all_ops() {
        let OpKind::Record { name, end, kind } = &f.ops[op].kind else { continue };
        let loc = f.ops[op].loc;
        let key = (name.clone(), *kind);
        let id = match by_key.get(&key) {
            Some(&id) => {
                let (i, here) = (id as usize, source_loc(loc, files));
                let better = table.regions[i].loc.is_none() || (!*end && !from_start[i]);
                if better && here.is_some() {
                    table.regions[i].loc = here;
                    from_start[i] = !*end;
                }
                id
            }
            None => {
                let id = table.regions.len() as u32;
                if id > MAX_REGION_ID {
                    return Err(Diagnostic::error(format!(
                        "`@{}` has more than {} profiled regions, more than a record's tag can number",
                        f.name,
                        MAX_REGION_ID as u64 + 1
                    ))
                    .at(loc, 1));
                }
                by_key.insert(key, id);
                table.regions.push(Region {
                    id,
                    name: name.clone(),
                    kind: meta_kind(*kind),
                    loc: source_loc(loc, files),
                });
                from_start.push(!*end && !loc.is_unknown());
                id
            }
        };
        table.ids.insert(op, id);
    }
    Ok(table)
}

/// A location with its file's path, when both are known.
fn source_loc(loc: Loc, files: &[SourceFile]) -> Option<SourceLoc> {
    if loc.is_unknown() {
        return None;
    }
    let file = files.get(loc.file as usize)?;
    Some(SourceLoc { file: file.path.clone(), line: loc.line, col: loc.col })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_ir::parse_module;

    fn table(text: &str) -> (trident_ir::Module, RegionTable) {
        let mut m = parse_module(text).unwrap();
        m.files = vec![SourceFile { path: "dir/k.py".into(), text: String::new() }];
        let t = regions_of(&m.funcs[0], &m.files).unwrap();
        (m, t)
    }

    #[test]
    fn one_region_per_name_and_kind_in_program_order() {
        let (m, t) = table(
            "kernel @k(%c: i1) {
  record [name = \"a\", end = false, kind = scope] loc(3:5)
  if %c {
    record [name = \"b\", end = false, kind = scope] loc(5:7)
    record [name = \"b\", end = true, kind = scope] loc(6:7)
    yield
  } {
    record [name = \"b\", end = false, kind = scope] loc(9:7)
    record [name = \"b\", end = true, kind = scope] loc(10:7)
    yield
  }
  record [name = \"a\", end = true, kind = scope] loc(12:5)
  record [name = \"a\", end = false, kind = loop] loc(13:5)
  record [name = \"a\", end = true, kind = loop] loc(13:5)
  return
}",
        );
        let got: Vec<(u32, &str, RegionKind, String)> = t
            .regions
            .iter()
            .map(|r| (r.id, r.name.as_str(), r.kind, r.loc.as_ref().map(|l| l.to_string()).unwrap_or_default()))
            .collect();
        assert_eq!(
            got,
            [
                (0, "a", RegionKind::Scope, "dir/k.py:3:5".to_string()),
                (1, "b", RegionKind::Scope, "dir/k.py:5:7".to_string()),
                (2, "a", RegionKind::Loop, "dir/k.py:13:5".to_string()),
            ]
        );
        let f = &m.funcs[0];
        let ids: Vec<u32> = f.all_ops().into_iter().filter_map(|op| t.id_of(op)).collect();
        assert_eq!(ids, [0, 1, 1, 1, 1, 0, 2, 2]);
        // What the meta validation wants of regions: unique 31-bit ids.
        let mut seen = std::collections::HashSet::new();
        assert!(t.regions.iter().all(|r| r.id <= MAX_REGION_ID && seen.insert(r.id)));
    }

    #[test]
    fn locations_without_files_or_lines_are_absent() {
        let mut m = parse_module(
            "kernel @k() {\n  record [name = \"x\", end = false, kind = dot]\n  record [name = \"x\", end = true, kind = dot] loc(2:3)\n  return\n}",
        )
        .unwrap();
        let t = regions_of(&m.funcs[0], &m.files).unwrap();
        assert_eq!(t.regions[0].loc, None);
        m.files = vec![SourceFile { path: "k.py".into(), text: String::new() }];
        let t = regions_of(&m.funcs[0], &m.files).unwrap();
        assert_eq!(
            t.regions[0].loc.as_ref().map(|l| l.to_string()).as_deref(),
            Some("k.py:2:3"),
            "the end's, failing the start's"
        );
        assert!(regions_of(&m.funcs[0], &[]).unwrap().regions[0].loc.is_none());
    }
}
