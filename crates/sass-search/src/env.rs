//! The game: a kernel's schedule as the state, "move one memory instruction one slot up or
//! down" and control-bit edits ([`crate::control`]) as the actions (only those the masks
//! allow), and a [`Reward`] — the SASS emulator's cycle estimate unless the caller brings
//! another (a GPU timer).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use trident_emu::KernelArg;
use trident_sass::disasm::{disassemble, section_text, Listing, Text};
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;
use trident_sass_emu::{launch, LaunchConfig, Program};

use crate::control::{Edit, Family, Lazy};
use crate::mask::Mask;
use crate::reward::{emu_error, Candidate, Emulated, Measurement, Noise, Reward, NOISE_ROUNDS};
use crate::SearchError;

/// Reads a cubin's instructions as text: `nvdisasm -json` in practice ([`nvdisasm`]); a
/// function so the caller decides where the tool is (this crate finds no tools).
pub type Disassembler = Arc<dyn Fn(&[u8]) -> Result<Vec<Listing>, String> + Send + Sync>;

/// The disassembler that runs `nvdisasm` at `tool` on a temporary copy of the cubin.
pub fn nvdisasm(tool: PathBuf) -> Disassembler {
    static N: AtomicU64 = AtomicU64::new(0);
    Arc::new(move |bytes: &[u8]| {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("trident-sass-search-{}-{n}.cubin", std::process::id()));
        std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let out = disassemble(&tool, &path);
        let _ = std::fs::remove_file(&path);
        out
    })
}

/// What to search: a cubin, the kernel in it, and the launch whose estimated cycles are
/// the reward (the arguments are also the template of the correctness check's inputs).
#[derive(Clone, Debug)]
pub struct Problem {
    pub cubin: Vec<u8>,
    pub kernel: String,
    pub args: Vec<KernelArg>,
    pub config: LaunchConfig,
}

/// The actions `trident sass search` offers unless `--actions` says otherwise: moves and
/// control-bit edits, the family with the best geometric mean of predicted speed-ups over the
/// eight kernel × target pairs of `bench/SASS.md` (2026-11-29: 1.038× against 1.035× for
/// edits alone and 1.009× for moves alone). A new [`Env`] itself offers moves, CuAsmRL's
/// action space, until its `family` is set.
pub const DEFAULT_FAMILY: Family = Family::All;

/// The instructions whose moves are the actions (CuAsmRL's choice: the memory instructions,
/// whose placement decides how much latency the rest of the schedule hides).
pub const MEMORY_OPCODES: &[&str] =
    &["LDG", "STG", "LDS", "STS", "LDSM", "STSM", "LDGSTS", "LD", "ST", "ATOMG", "ATOMS", "RED"];

/// Whether `t` is one of [`MEMORY_OPCODES`].
pub fn is_memory(t: &Text) -> bool {
    let root = t.opcode.split('.').next().unwrap_or("");
    MEMORY_OPCODES.contains(&root)
}

/// A schedule: the whole cubin (the moved kernel's words with their repaired control bits),
/// its instructions' text in the new order, and the moves that led here from the original.
#[derive(Clone, Debug)]
pub struct State {
    pub cubin: Cubin,
    pub text: Vec<Text>,
    pub moves: Vec<Move>,
    /// The legal one-slot moves of this order ([`Mask`]: kept up to date move by move, so
    /// asking for the actions costs no dependence analysis).
    pub mask: Mask,
    /// The legal control-bit edits of this schedule ([`crate::control::edits`]), computed
    /// the first time a search with edits asks.
    pub(crate) edits: Lazy,
}

/// One step made: the instruction at `from` now at `to` (adjacent), and how many repairs
/// (stalls, waits, reuse flags) it needed; or, for a control-bit edit (`edit`), the
/// instruction edited (`from == to`, no repairs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: usize,
    pub to: usize,
    pub line: String,
    pub repairs: usize,
    pub edit: Option<Edit>,
}

impl Move {
    /// The action that made this step (from the state before it).
    pub fn action(&self) -> Action {
        match self.edit {
            Some(edit) => Action::Edit { at: self.from, edit },
            None => Action::Move { at: self.from, up: self.to < self.from },
        }
    }
}

/// An action: move the memory instruction at position `at` one slot earlier (`up`) or later,
/// or edit the control bits of instruction `at` ([`Edit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Move { at: usize, up: bool },
    Edit { at: usize, edit: Edit },
}

impl Action {
    /// The instruction it acts on.
    pub fn at(self) -> usize {
        match self {
            Action::Move { at, .. } | Action::Edit { at, .. } => at,
        }
    }

    /// The signed distance of a move: -1 up, +1 down; 0 for an edit.
    pub fn by(self) -> isize {
        match self {
            Action::Move { up: true, .. } => -1,
            Action::Move { up: false, .. } => 1,
            Action::Edit { .. } => 0,
        }
    }

    /// Whether it moves an instruction up (false for down and for edits).
    pub fn up(self) -> bool {
        matches!(self, Action::Move { up: true, .. })
    }
}

/// What an environment has done so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Schedules scored by the reward (cache misses): launches on the SASS emulator, or
    /// timed runs on a GPU.
    pub evaluations: usize,
    /// Scores answered from the cache (the same instruction words seen before).
    pub cache_hits: usize,
    /// Steps made: moves (applied, repaired and verified) and control-bit edits (verified).
    pub moves: usize,
    /// Control-bit edits made (verified), counted in `moves` too.
    pub edits: usize,
    /// Moves `move_instr` refused (no repair makes them safe), and edits the edit mask
    /// refused.
    pub refused: usize,
    /// Moved or edited schedules the verifier rejected (should stay 0: the repair runs
    /// against the same verifier, and the edit mask is a stricter version of its rule).
    pub verifier_rejected: usize,
    /// Schedules the reward could not score (the SASS emulator stopped them: a hazard or
    /// another error; a GPU launch failed): never kept.
    pub emulator_errors: usize,
    /// Correctness checks run (each kept schedule), and how many failed (kept nowhere).
    pub checks: usize,
    pub check_failures: usize,
    /// What the first failed check found (the verifier's complaint, the differing output).
    pub first_check_failure: Option<String>,
    /// Measured rewards only: fresh measurements outside the cache (the original's noise
    /// rounds, each gain's confirmation, the end's interleaved rounds), and how many gains
    /// the confirmation did not bear out.
    pub remeasures: usize,
    pub unconfirmed: usize,
}

/// The environment: the original schedule, the launch, the evaluation cache.
pub struct Env {
    /// The kernel's index in the cubin, its name, its architecture (80, 90).
    pub kernel: usize,
    pub name: String,
    pub sm: u32,
    pub(crate) original: State,
    pub(crate) original_program: Program,
    pub(crate) problem: Problem,
    pub(crate) disasm: Disassembler,
    /// The original schedule's score in the reward's unit (estimated cycles by default; for
    /// a measured reward, the median of its [`NOISE_ROUNDS`] measurements).
    pub original_cycles: u64,
    /// What a gain must exceed to count ([`Noise::exact`] for an exact reward).
    pub noise: Noise,
    pub(crate) reward: Box<dyn Reward>,
    /// Which actions [`Env::actions`] offers (moves unless set; the CLI sets
    /// [`DEFAULT_FAMILY`] or what `--actions` asks).
    pub family: Family,
    /// The kernel's instruction words (control bits included) → its score or why it has none.
    cache: HashMap<Vec<(u64, u64)>, Result<u64, String>>,
    pub stats: Stats,
}

/// The text of kernel `kernel` of `cubin` (whose bytes are `bytes`), read by `disasm`.
pub(crate) fn kernel_text(
    disasm: &Disassembler,
    bytes: &[u8],
    cubin: &Cubin,
    kernel: usize,
) -> Result<Vec<Text>, String> {
    let listings = disasm(bytes)?;
    let k = &cubin.kernels[kernel];
    let text = section_text(cubin, &listings, k.text_section);
    if text.len() != k.instrs.len() {
        return Err(format!(
            "kernel `{}`: the disassembler lists {} instructions, the section holds {}",
            k.name,
            text.len(),
            k.instrs.len()
        ));
    }
    Ok(text)
}

impl Env {
    /// Reads the problem's cubin, checks the original (timing-clean, runs on the SASS
    /// emulator) and scores it by the SASS emulator's cycle estimate ([`Emulated`]). Errors
    /// say what is wrong with the input.
    pub fn new(problem: Problem, disasm: Disassembler) -> Result<Env, SearchError> {
        Env::with_reward(problem, disasm, Box::new(Emulated))
    }

    /// [`Env::new`] with another reward. The original still has to run on the SASS emulator
    /// (every kept schedule is checked there); a measured reward then scores it
    /// [`NOISE_ROUNDS`] times to estimate the noise ([`Env::noise`]).
    pub fn with_reward(problem: Problem, disasm: Disassembler, reward: Box<dyn Reward>) -> Result<Env, SearchError> {
        let cubin = Cubin::parse(&problem.cubin).map_err(|e| SearchError(format!("the cubin: {e}")))?;
        let kernel = cubin.kernels.iter().position(|k| k.name == problem.kernel).ok_or_else(|| {
            let names: Vec<&str> = cubin.kernels.iter().map(|k| k.name.as_str()).collect();
            SearchError(format!("no kernel `{}` in the cubin (it has: {})", problem.kernel, names.join(", ")))
        })?;
        let text = kernel_text(&disasm, &problem.cubin, &cubin, kernel).map_err(SearchError)?;
        let sm = cubin.sm();
        if let Some(v) = timing(sm, &cubin.kernels[kernel].instrs, &text).first() {
            return Err(SearchError(format!("the original schedule fails the verifier: {}", v.describe(&text))));
        }
        let name = problem.kernel.clone();
        let original_program =
            Program::new(&cubin, &name, &text).map_err(|e| SearchError(format!("the SASS emulator: {e}")))?;
        // Parameters the cubin declares past the given arguments (Triton's scratch
        // pointers) are passed null, as the sass-emu backend does.
        let mut problem = problem;
        while problem.args.len() < original_program.kernel.params.len() {
            problem.args.push(KernelArg::Null);
        }
        let mut args = problem.args.clone();
        let report = launch(&original_program, &problem.config, &mut args)
            .map_err(|e| SearchError(format!("the original kernel on the SASS emulator: {}", emu_error(e))))?;
        let mask = Mask::new(&text);
        let original = State { cubin, text, moves: vec![], mask, edits: Lazy::new() };
        let mut env = Env {
            kernel,
            name,
            sm,
            original,
            original_program,
            problem,
            disasm,
            original_cycles: report.cycles,
            noise: Noise::exact(),
            reward,
            family: Family::Moves,
            cache: HashMap::new(),
            stats: Stats::default(),
        };
        let original = env.original.clone();
        let what = env.reward.describe();
        let bad = |e: String| SearchError(format!("the original kernel, scored by {what}: {e}"));
        if env.reward.exact() {
            let m = env.score(&original, Some(report.cycles)).map_err(bad)?;
            env.original_cycles = m.value;
        } else {
            let mut rounds = vec![];
            for _ in 0..NOISE_ROUNDS {
                env.stats.remeasures += 1;
                rounds.push(env.score(&original, None).map_err(bad)?);
            }
            env.noise = Noise::estimate(&rounds);
            env.original_cycles = env.noise.centre().unwrap_or(rounds[0].value);
        }
        let key = env.key(&env.original);
        env.cache.insert(key, Ok(env.original_cycles));
        Ok(env)
    }

    /// What the reward is ("the SASS emulator's cycle estimate") and its unit ("cycles").
    pub fn reward(&self) -> (String, &'static str) {
        (self.reward.describe(), self.reward.unit())
    }

    /// Whether the reward is exact (no noise, no second measurements).
    pub fn exact(&self) -> bool {
        self.reward.exact()
    }

    /// The reward's score of `s`, outside the cache and the counts.
    fn score(&mut self, s: &State, emulated: Option<u64>) -> Result<Measurement, String> {
        let c = Candidate { state: s, kernel: &self.name, problem: &self.problem, emulated };
        self.reward.score(&c)
    }

    /// A fresh measurement of `s` (not from the cache; counted in `Stats::remeasures`). When
    /// `replace`, its value becomes `s`'s cached score.
    pub fn remeasure(&mut self, s: &State, replace: bool) -> Result<u64, String> {
        self.stats.remeasures += 1;
        let v = self.score(s, None)?.value;
        if replace {
            let key = self.key(s);
            self.cache.insert(key, Ok(v));
        }
        Ok(v)
    }

    /// Why the reward can no longer score anything ([`Reward::lost`]), once it cannot.
    pub fn lost(&self) -> Option<String> {
        self.reward.lost()
    }

    /// The reward's own check of `s` ([`Reward::check`]).
    pub(crate) fn reward_check(&mut self, s: &State) -> Result<(), String> {
        let c = Candidate { state: s, kernel: &self.name, problem: &self.problem, emulated: None };
        self.reward.check(&c)
    }

    /// The schedule `ptxas` made.
    pub fn original(&self) -> &State {
        &self.original
    }

    /// The launch the reward runs.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The cache key of a state: the kernel's words, control bits included (a move's
    /// repairs depend on the path, so two states with the same order may differ in stalls).
    pub(crate) fn key(&self, s: &State) -> Vec<(u64, u64)> {
        s.cubin.kernels[self.kernel].instrs.iter().map(|i| (i.lo, i.hi)).collect()
    }

    /// The legal actions in `s` for [`Env::family`]: each memory instruction one slot up or
    /// down where the dependence mask allows it — read from `s.mask` (the same set as
    /// [`Env::actions_by_legal_range`], without its per-instruction dependence graphs) — and
    /// the control-bit edits the edit mask allows ([`crate::control`]), moves first.
    pub fn actions(&self, s: &State) -> Vec<Action> {
        let mut out = if self.family.moves() { s.mask.actions(&s.text) } else { vec![] };
        if self.family.edits() {
            out.extend(self.edits(s).iter().copied());
        }
        out
    }

    /// The legal control-bit edits of `s` (whatever the family), from its lazy mask.
    pub fn edits(&self, s: &State) -> Arc<Vec<Action>> {
        s.edits
            .get_or_init(|| Arc::new(crate::control::edits(self.sm, &s.cubin.kernels[self.kernel].instrs, &s.text)))
            .clone()
    }

    /// The legal moves as `rewrite::legal_range` gives them, asked per memory instruction
    /// (each call builds its block's dependence graph): the reference the mask is tested
    /// against, and what [`Env::actions`] did before.
    pub fn actions_by_legal_range(&self, s: &State) -> Vec<Action> {
        let mut out = vec![];
        for (i, t) in s.text.iter().enumerate() {
            if !is_memory(t) {
                continue;
            }
            let Ok((lo, hi)) = trident_sass::rewrite::legal_range(&s.text, i) else { continue };
            if lo < i {
                out.push(Action::Move { at: i, up: true });
            }
            if hi > i {
                out.push(Action::Move { at: i, up: false });
            }
        }
        out
    }

    /// `s` after action `a`: a move with its repairs (`rewrite::move_instr`), or a control-bit
    /// edit the edit mask allows; then the verifier — timing, and a legal reordering of the
    /// original. An error says why the action was refused; `s` is never changed.
    pub fn apply(&mut self, s: &State, a: Action) -> Result<State, String> {
        let (at, up) = match a {
            Action::Move { at, up } => (at, up),
            Action::Edit { at, edit } => return self.edit(s, at, edit),
        };
        let by = if up { -1 } else { 1 };
        let mut cubin = s.cubin.clone();
        let moved = match trident_sass::rewrite::move_instr(&mut cubin, self.kernel, &s.text, at, by) {
            Ok(m) => m,
            Err(e) => {
                self.stats.refused += 1;
                return Err(e);
            }
        };
        let k = &cubin.kernels[self.kernel];
        if let Err(e) = self.verified(&k.instrs, &moved.text) {
            return Err(format!("the moved schedule fails the verifier: {e}"));
        }
        self.stats.moves += 1;
        let mut moves = s.moves.clone();
        moves.push(Move {
            from: moved.from,
            to: moved.to,
            line: s.text[at].line(),
            repairs: moved.repairs.len(),
            edit: None,
        });
        let mask = if moved.from.abs_diff(moved.to) == 1 {
            s.mask.after_swap(&moved.text, moved.from.min(moved.to))
        } else {
            Mask::new(&moved.text)
        };
        Ok(State { cubin, text: moved.text, moves, mask, edits: Lazy::new() })
    }

    /// The verifier on a candidate kernel: timing, and a legal reordering of the original.
    /// Counted in `verifier_rejected` when it fails.
    fn verified(&mut self, instrs: &[trident_sass::Instr], text: &[Text]) -> Result<(), String> {
        let orig = &self.original;
        let mut v = timing(self.sm, instrs, text);
        v.extend(reordering((&orig.cubin.kernels[self.kernel].instrs, &orig.text), (instrs, text)));
        match v.first() {
            Some(x) => {
                self.stats.verifier_rejected += 1;
                Err(x.describe(text))
            }
            None => Ok(()),
        }
    }

    /// `s` after control-bit edit `edit` of instruction `at`, if the edit mask allows it and
    /// the verifier passes the result.
    fn edit(&mut self, s: &State, at: usize, edit: Edit) -> Result<State, String> {
        let k = self.kernel;
        if !crate::control::legal(self.sm, &s.cubin.kernels[k].instrs, &s.text, at, edit) {
            self.stats.refused += 1;
            let what = s.text.get(at).map_or_else(|| format!("no instruction {at}"), |t| format!("`{}`", t.line()));
            return Err(format!("{} of {what}: not allowed by the edit mask", edit.name()));
        }
        let mut cubin = s.cubin.clone();
        let mut text = s.text.clone();
        crate::control::make(&mut cubin.kernels[k].instrs, &mut text, at, edit);
        if let Err(e) = self.verified(&cubin.kernels[k].instrs, &text) {
            return Err(format!("the edited schedule fails the verifier: {e}"));
        }
        self.stats.moves += 1;
        self.stats.edits += 1;
        let mut moves = s.moves.clone();
        moves.push(Move { from: at, to: at, line: s.text[at].line(), repairs: 0, edit: Some(edit) });
        // The order is unchanged, and so are the registers: the move mask still holds.
        Ok(State { cubin, text, moves, mask: s.mask.clone(), edits: Lazy::new() })
    }

    /// The reward's score of `s` (by default the estimated cycles, `Report::cycles`: the
    /// slowest CTA of the launch), from the cache when these instruction words were scored
    /// before. An error: the reward could not score the schedule (it is then never kept).
    pub fn evaluate(&mut self, s: &State) -> Result<u64, String> {
        let key = self.key(s);
        if let Some(r) = self.cache.get(&key) {
            self.stats.cache_hits += 1;
            return r.clone();
        }
        self.stats.evaluations += 1;
        let r = self.score(s, None).map(|m| m.value);
        if r.is_err() {
            self.stats.emulator_errors += 1;
        }
        self.cache.insert(key, r.clone());
        r
    }

    /// Whether `s` was scored before (its score is then free).
    pub fn cached(&self, s: &State) -> bool {
        self.cache.contains_key(&self.key(s))
    }

    /// Marks `s` as unusable (it failed the correctness check): later scores say so.
    pub(crate) fn forbid(&mut self, s: &State, why: String) {
        let key = self.key(s);
        self.cache.insert(key, Err(why));
    }
}
