//! PPO (proximal policy optimisation) on the schedule game, after CuAsmRL's agent: a small
//! policy network scores each legal action from its own features, a masked softmax over
//! the legal actions picks one, a value network estimates the return, and the clipped
//! objective updates both from batches of short episodes that start at `ptxas`'s schedule.
//!
//! The networks are two one-hidden-layer perceptrons written here with their gradients by
//! hand (see the crate's README for why not candle): the inputs are a few dozen numbers, so a
//! tensor library would bring ~80 crates of build for arithmetic that fits on a page, and
//! hand-written f64 loops replay bit for bit from a seed.
//!
//! * **Policy.** `logit(a) = w2 · tanh(W1 x_a + b1)` for each legal action `a` (features
//!   `x_a`, [`FEATURES`]); π = softmax over the legal actions only — illegal actions have no
//!   features and no probability (the mask is the action set itself).
//! * **Value.** `V(s) = u2 · tanh(U1 g_s + c1) + c2` on the state's features `g_s`: the mean of
//!   its actions' features, the step in the episode, the improvement so far, the number of
//!   legal actions.
//! * **Reward** per step: the relative cycle improvement, `100 · (c_prev − c_new) / c_orig`
//!   (percent of the original), so an episode's return is its schedule's gain. A move the
//!   toolkit refuses costs a little and leaves the state; a schedule the emulator stops (or
//!   that failed the correctness check) ends the episode with a penalty.
//! * **Update**: GAE(γ, λ) advantages (normalised per batch), `EPOCHS` passes over the batch in
//!   shuffled minibatches, the clipped surrogate with an entropy bonus, the value's squared
//!   error, Adam.
//!
//! Every schedule the agent reaches is offered to the search's bookkeeping like the
//! baselines' (`Run::offer`): it becomes the best only after `Env::check` passes.

use std::collections::HashMap;
use std::rc::Rc;

use trident_sass::deps::blocks;
use trident_sass::disasm::Text;
use trident_sass::operands::{operands, Operands};

use crate::control::Edit;
use crate::env::{Action, State};
use crate::rng::Rng;
use crate::search::{Offer, Run, SPENT};

/// Hyperparameters (chosen for budgets of about a thousand emulator runs: short episodes,
/// small batches, so the policy updates a few dozen times a minute).
pub(crate) const HIDDEN: usize = 32;
/// Moves per episode (from the original schedule each time).
pub(crate) const HORIZON: usize = 24;
/// Transitions per update (whole episodes are collected until at least this many).
pub(crate) const BATCH: usize = 48;
pub(crate) const EPOCHS: usize = 4;
pub(crate) const MINIBATCH: usize = 16;
pub(crate) const LR: f64 = 3e-3;
pub(crate) const CLIP: f64 = 0.2;
pub(crate) const GAMMA: f64 = 0.99;
pub(crate) const LAMBDA: f64 = 0.95;
pub(crate) const ENTROPY: f64 = 0.01;
pub(crate) const VALUE_COEF: f64 = 0.5;
/// Reward for a move the toolkit refused (state unchanged) and for a schedule that cannot be
/// scored (episode over).
const REFUSED: f64 = -0.05;
const UNUSABLE: f64 = -1.0;

/// Per-action features (see [`Features::action`]).
pub const FEATURES: usize = 22;
/// Value-network inputs: the mean action features and three of the state's own.
const GLOBAL: usize = FEATURES + 3;
/// How far (slots) the producer/consumer search looks; distances are scaled by it.
const WINDOW: usize = 48;

/// A one-hidden-layer perceptron `y = w2 · tanh(W1 x + b1) + b2`, its parameters in one
/// vector (`W1` row-major, `b1`, `w2`, `b2`) so Adam runs over one slice.
struct Mlp {
    inp: usize,
    p: Vec<f64>,
}

impl Mlp {
    fn new(inp: usize, rng: &mut Rng) -> Mlp {
        let mut p = vec![0.0; HIDDEN * inp + 2 * HIDDEN + 1];
        // Uniform(±1/√fan_in) for both layers; biases zero. The output layer starts small so
        // the first policy is close to uniform over the legal actions.
        let s1 = 1.0 / (inp as f64).sqrt();
        for w in &mut p[..HIDDEN * inp] {
            *w = (2.0 * rng.uniform() - 1.0) * s1;
        }
        let s2 = 0.1 / (HIDDEN as f64).sqrt();
        for w in &mut p[HIDDEN * inp + HIDDEN..HIDDEN * inp + 2 * HIDDEN] {
            *w = (2.0 * rng.uniform() - 1.0) * s2;
        }
        Mlp { inp, p }
    }

    /// The output for input `x`, the hidden activations left in `h`.
    fn forward(&self, x: &[f64], h: &mut [f64; HIDDEN]) -> f64 {
        let (w1, rest) = self.p.split_at(HIDDEN * self.inp);
        let (b1, rest) = rest.split_at(HIDDEN);
        let (w2, b2) = rest.split_at(HIDDEN);
        let mut y = b2[0];
        for k in 0..HIDDEN {
            let row = &w1[k * self.inp..(k + 1) * self.inp];
            let z: f64 = b1[k] + row.iter().zip(x).map(|(w, v)| w * v).sum::<f64>();
            h[k] = z.tanh();
            y += w2[k] * h[k];
        }
        y
    }

    /// Adds to `grad` the gradient of a loss whose derivative in the output is `g`, for the
    /// input `x` with hidden activations `h` (from [`Mlp::forward`]).
    fn backward(&self, x: &[f64], h: &[f64; HIDDEN], g: f64, grad: &mut [f64]) {
        let n1 = HIDDEN * self.inp;
        let w2 = &self.p[n1 + HIDDEN..n1 + 2 * HIDDEN];
        for k in 0..HIDDEN {
            grad[n1 + HIDDEN + k] += g * h[k];
            let gz = g * w2[k] * (1.0 - h[k] * h[k]);
            grad[n1 + k] += gz;
            for (gw, v) in grad[k * self.inp..(k + 1) * self.inp].iter_mut().zip(x) {
                *gw += gz * v;
            }
        }
        grad[n1 + 2 * HIDDEN] += g;
    }
}

/// Adam over one parameter vector.
struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl Adam {
    fn new(n: usize) -> Adam {
        Adam { m: vec![0.0; n], v: vec![0.0; n], t: 0 }
    }

    fn step(&mut self, p: &mut [f64], g: &[f64]) {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        self.t += 1;
        let (c1, c2) = (1.0 - B1.powi(self.t), 1.0 - B2.powi(self.t));
        for i in 0..p.len() {
            // Clip each component: one bad minibatch must not throw the policy away.
            let gi = g[i].clamp(-5.0, 5.0);
            self.m[i] = B1 * self.m[i] + (1.0 - B1) * gi;
            self.v[i] = B2 * self.v[i] + (1.0 - B2) * gi * gi;
            p[i] -= LR * (self.m[i] / c1) / ((self.v[i] / c2).sqrt() + 1e-8);
        }
    }
}

/// The feature extractor: the kernel's blocks (fixed under legal moves) and each
/// instruction's registers, cached by its text.
pub(crate) struct Features {
    /// For each position, its block's `[start, end)`.
    block: Vec<(usize, usize)>,
    ops: HashMap<String, Rc<Operands>>,
}

fn class(t: &Text) -> usize {
    match t.opcode.split('.').next().unwrap_or("") {
        "LDG" => 0,
        "STG" | "RED" | "ATOMG" => 1,
        "LDS" | "LDSM" => 2,
        "STS" | "STSM" | "ATOMS" => 3,
        "LDGSTS" => 4,
        _ => 5,
    }
}

impl Features {
    pub(crate) fn new(text: &[Text]) -> Features {
        let mut block = vec![(0, text.len()); text.len()];
        for b in blocks(text) {
            for x in &mut block[b.start..b.end] {
                *x = (b.start, b.end);
            }
        }
        Features { block, ops: HashMap::new() }
    }

    fn ops(&mut self, t: &Text) -> Rc<Operands> {
        self.ops.entry(t.line()).or_insert_with(|| Rc::new(operands(t))).clone()
    }

    /// The features of action `a` in `s` (kernel `k`), pushed onto `out` ([`FEATURES`] numbers,
    /// each in about [-1, 1]):
    /// 0–5 the opcode class (global load, global store/atomic, shared load, shared store,
    /// async copy, other); 6 the direction (+1 up, −1 down); 7–8 the nearest producer above
    /// (an instruction whose result it reads): distance in slots and in stall cycles; 9–10 the
    /// nearest consumer below (reads its result), likewise; 11 its own stall count, 12 that of
    /// the instruction it swaps with, 13 the stall before it; 14 it waits on a scoreboard; 15
    /// it sets one; 16 the instruction it swaps with waits on one; 17 that instruction is a
    /// memory instruction; 18 its position in its block; 19–21 the action's kind (a move, a
    /// reuse flag set, a stall lowered). For a control-bit edit, "the instruction it swaps
    /// with" is the next one (the reader of a reused operand, or the one the stall delays)
    /// and the direction is 0.
    fn action(&mut self, s: &State, k: usize, a: Action, out: &mut Vec<f64>) {
        let (i, text) = (a.at(), &s.text);
        let instrs = &s.cubin.kernels[k].instrs;
        let (bs, be) = self.block.get(i).copied().unwrap_or((0, text.len()));
        let other = if a.up() { i.saturating_sub(1) } else { (i + 1).min(text.len() - 1) };
        let stall = |j: usize| instrs.get(j).map_or(0, |x| x.control().stall) as f64;
        let me = self.ops(&text[i]);
        let meets = |x: &[trident_sass::operands::Reg], y: &[trident_sass::operands::Reg]| {
            x.iter().any(|r| y.binary_search(r).is_ok())
        };
        let (mut up_slots, mut up_stalls) = (WINDOW as f64, 0.0);
        let mut acc = 0.0;
        for j in (bs.max(i.saturating_sub(WINDOW))..i).rev() {
            acc += stall(j);
            if meets(&self.ops(&text[j]).defs, &me.uses) {
                up_slots = (i - j) as f64;
                up_stalls = acc;
                break;
            }
        }
        if up_slots == WINDOW as f64 {
            up_stalls = acc.max(WINDOW as f64);
        }
        let (mut down_slots, mut down_stalls) = (WINDOW as f64, 0.0);
        let mut acc = 0.0;
        for (j, tj) in text.iter().enumerate().take(be.min(i + 1 + WINDOW)).skip(i + 1) {
            acc += stall(j - 1);
            if meets(&me.defs, &self.ops(tj).uses) {
                down_slots = (j - i) as f64;
                down_stalls = acc;
                break;
            }
        }
        if down_slots == WINDOW as f64 {
            down_stalls = acc.max(WINDOW as f64);
        }
        let c = trident_sass::control::Control::decode(instrs.get(i).map_or(0, |x| x.hi));
        let co = trident_sass::control::Control::decode(instrs.get(other).map_or(0, |x| x.hi));
        let w = WINDOW as f64;
        let mut onehot = [0.0; 6];
        onehot[class(&text[i])] = 1.0;
        out.extend_from_slice(&onehot);
        out.push(-(a.by() as f64));
        out.push(up_slots / w);
        out.push((up_stalls / w).min(1.0));
        out.push(down_slots / w);
        out.push((down_stalls / w).min(1.0));
        out.push(c.stall as f64 / 15.0);
        out.push(co.stall as f64 / 15.0);
        out.push(if i > 0 { stall(i - 1) / 15.0 } else { 0.0 });
        out.push((c.wait != 0) as u8 as f64);
        out.push((c.write_sb.is_some() || c.read_sb.is_some()) as u8 as f64);
        out.push((co.wait != 0) as u8 as f64);
        out.push(crate::env::is_memory(&text[other]) as u8 as f64);
        out.push((i - bs) as f64 / (be - bs).max(1) as f64);
        let kind = match a {
            Action::Move { .. } => 0,
            Action::Edit { edit: Edit::SetReuse(_), .. } => 1,
            Action::Edit { edit: Edit::LowerStall, .. } => 2,
        };
        for x in 0..3 {
            out.push((x == kind) as u8 as f64);
        }
    }
}

/// One step of experience.
struct Step {
    /// The legal actions' features, `FEATURES` per action.
    x: Vec<f64>,
    chosen: usize,
    logp: f64,
    g: Vec<f64>,
    value: f64,
    reward: f64,
    /// The episode ended after this step.
    done: bool,
}

/// The policy's log-probabilities over the actions whose features are `x`.
fn log_softmax(pi: &Mlp, x: &[f64]) -> Vec<f64> {
    let mut h = [0.0; HIDDEN];
    let logits: Vec<f64> = x.chunks(FEATURES).map(|xa| pi.forward(xa, &mut h)).collect();
    let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + logits.iter().map(|l| (l - m).exp()).sum::<f64>().ln();
    logits.iter().map(|l| l - lse).collect()
}

fn global(x: &[f64], step: usize, gain: f64, n: usize) -> Vec<f64> {
    let mut g = vec![0.0; GLOBAL];
    for xa in x.chunks(FEATURES) {
        for (gi, v) in g.iter_mut().zip(xa) {
            *gi += v / n as f64;
        }
    }
    g[FEATURES] = step as f64 / HORIZON as f64;
    g[FEATURES + 1] = gain.clamp(-5.0, 5.0);
    g[FEATURES + 2] = (n as f64 / 100.0).min(2.0);
    g
}

/// PPO until the budget is spent. Deterministic for a seed under an evaluation budget (a
/// time budget cuts the run wherever the clock says).
pub(crate) fn ppo(run: &mut Run) -> String {
    let mut rng = Rng::new(run.opts.seed ^ 0x5050_4f00);
    let mut pi = Mlp::new(FEATURES, &mut rng);
    let mut vf = Mlp::new(GLOBAL, &mut rng);
    let (mut opt_pi, mut opt_vf) = (Adam::new(pi.p.len()), Adam::new(vf.p.len()));
    let k = run.env.kernel;
    let orig = run.env.original().clone();
    let orig_c = run.env.original_cycles as f64;
    let mut feats = Features::new(&orig.text);
    let mut h = [0.0; HIDDEN];
    if run.env.actions(&orig).is_empty() {
        return "no legal move".into();
    }
    loop {
        // Collect whole episodes until the batch is full.
        let mut batch: Vec<Step> = vec![];
        while batch.len() < BATCH {
            let (mut s, mut c) = (orig.clone(), orig_c);
            for step in 0..HORIZON {
                if run.spent() {
                    return SPENT.into();
                }
                let actions = run.env.actions(&s);
                if actions.is_empty() {
                    if let Some(last) = batch.last_mut() {
                        last.done = true;
                    }
                    break;
                }
                let mut x = Vec::with_capacity(actions.len() * FEATURES);
                for &a in &actions {
                    feats.action(&s, k, a, &mut x);
                }
                let logp = log_softmax(&pi, &x);
                // Sample from π (inverse CDF with the seeded generator).
                let u = rng.uniform();
                let mut acc = 0.0;
                let mut chosen = actions.len() - 1;
                for (j, lp) in logp.iter().enumerate() {
                    acc += lp.exp();
                    if u < acc {
                        chosen = j;
                        break;
                    }
                }
                let g = global(&x, step, 100.0 * (orig_c - c) / orig_c, actions.len());
                let value = vf.forward(&g, &mut h);
                let (reward, next, end) = match run.env.apply(&s, actions[chosen]) {
                    Err(_) => (REFUSED, None, false),
                    Ok(child) => match run.score(&child) {
                        None => (UNUSABLE, None, true),
                        Some(cc) => {
                            if run.improves(cc, run.best_cycles) && run.offer(&child, cc) == Offer::Forbidden {
                                (UNUSABLE, None, true)
                            } else {
                                let r = 100.0 * (c - cc as f64) / orig_c;
                                (r, Some((child, cc as f64)), false)
                            }
                        }
                    },
                };
                let done = end || step + 1 == HORIZON;
                batch.push(Step { x, chosen, logp: logp[chosen], g, value, reward, done });
                if let Some((child, cc)) = next {
                    s = child;
                    c = cc;
                }
                if end {
                    break;
                }
            }
            if let Some(last) = batch.last_mut() {
                last.done = true;
            }
        }
        update(&mut pi, &mut vf, &mut opt_pi, &mut opt_vf, &batch, &mut rng);
    }
}

/// GAE advantages and returns, then the clipped-objective epochs.
fn update(pi: &mut Mlp, vf: &mut Mlp, opt_pi: &mut Adam, opt_vf: &mut Adam, batch: &[Step], rng: &mut Rng) {
    let n = batch.len();
    let mut adv = vec![0.0; n];
    let mut last = 0.0;
    for t in (0..n).rev() {
        let next_v = if batch[t].done || t + 1 == n { 0.0 } else { batch[t + 1].value };
        let carry = if batch[t].done { 0.0 } else { last };
        let delta = batch[t].reward + GAMMA * next_v - batch[t].value;
        last = delta + GAMMA * LAMBDA * carry;
        adv[t] = last;
    }
    let ret: Vec<f64> = (0..n).map(|t| adv[t] + batch[t].value).collect();
    let mean = adv.iter().sum::<f64>() / n as f64;
    let sd = (adv.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n as f64).sqrt().max(1e-8);
    let adv: Vec<f64> = adv.iter().map(|a| (a - mean) / sd).collect();
    let mut order: Vec<usize> = (0..n).collect();
    let mut h = [0.0; HIDDEN];
    for _ in 0..EPOCHS {
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for mb in order.chunks(MINIBATCH) {
            let mut g_pi = vec![0.0; pi.p.len()];
            let mut g_vf = vec![0.0; vf.p.len()];
            let scale = 1.0 / mb.len() as f64;
            for &t in mb {
                let st = &batch[t];
                // Policy: d(loss)/d(logit_j) for the clipped surrogate and the entropy bonus.
                let logp = log_softmax(pi, &st.x);
                let ratio = (logp[st.chosen] - st.logp).exp();
                let a = adv[t];
                let clipped = (a >= 0.0 && ratio > 1.0 + CLIP) || (a < 0.0 && ratio < 1.0 - CLIP);
                let g_logp = if clipped { 0.0 } else { -a * ratio };
                let entropy: f64 = -logp.iter().map(|l| l.exp() * l).sum::<f64>();
                for (j, xa) in st.x.chunks(FEATURES).enumerate() {
                    let p = logp[j].exp();
                    let onehot = if j == st.chosen { 1.0 } else { 0.0 };
                    let g = g_logp * (onehot - p) + ENTROPY * p * (logp[j] + entropy);
                    if g != 0.0 {
                        pi.forward(xa, &mut h);
                        pi.backward(xa, &h, g * scale, &mut g_pi);
                    }
                }
                // Value: squared error against the GAE return.
                let v = vf.forward(&st.g, &mut h);
                vf.backward(&st.g, &h, VALUE_COEF * (v - ret[t]) * scale, &mut g_vf);
            }
            opt_pi.step(&mut pi.p, &g_pi);
            opt_vf.step(&mut vf.p, &g_vf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written gradient agrees with a finite difference.
    #[test]
    fn mlp_gradient_matches_finite_differences() {
        let mut rng = Rng::new(3);
        let mut m = Mlp::new(5, &mut rng);
        for w in &mut m.p {
            *w += 0.3 * (rng.uniform() - 0.5);
        }
        let x = [0.3, -0.7, 0.1, 0.9, -0.2];
        let mut h = [0.0; HIDDEN];
        // Loss = y²/2, so dL/dy = y.
        let y = m.forward(&x, &mut h);
        let mut g = vec![0.0; m.p.len()];
        m.backward(&x, &h, y, &mut g);
        for i in (0..m.p.len()).step_by(7) {
            let e = 1e-6;
            m.p[i] += e;
            let up = m.forward(&x, &mut h).powi(2) / 2.0;
            m.p[i] -= 2.0 * e;
            let down = m.forward(&x, &mut h).powi(2) / 2.0;
            m.p[i] += e;
            let fd = (up - down) / (2.0 * e);
            assert!((fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()), "param {i}: {fd} vs {}", g[i]);
        }
    }
}
