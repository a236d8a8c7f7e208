#!/usr/bin/env python3
"""Generate a prelude-based Lean library of a chosen size and compile it.

The library stands in for a Mathlib-sized workspace on a toolchain without a
core library (../shared/reference/TEST-LEAN.md): every module starts with
`prelude` and imports the foundations of tests/fixtures/basic/Fix/Basic.lean
(copied in as `Fix.Basic`), directly or through other modules.

Shape:
  * modules `Gen/L<layer>/M<i>.lean` in layers; each module imports 1-5
    modules of the three layers before (one always from the layer just
    before; seeded), the first layer `Fix.Basic`, so the
    import DAG has Mathlib's look: wide, about sqrt(N) layers deep, every
    module reachable from the last layer's;
  * per module `--decls` declarations: definitions over `N`, theorems with
    tactic proofs of 3-8 lines (induction, cases, show, exact, apply),
    theorems that use declarations of imported modules;
  * `--long` modules (the last layer's first ones) are 10 times as long.

Compiles every module with `lean -o/-i` into Lake's layout
(`.lake/build/lib/lean`), two at a time in dependency order, and writes
`lakefile.toml`, `lean-toolchain` and `BUILD-MODULES`. Prints a JSON summary
(modules, declarations, lines, bytes, compile seconds) on stdout.

With `--flavour search` (for scripts/bench-search.py: lean_search's index
reads sources, so nothing is compiled) the declarations read like Mathlib's
instead: namespaces from a vocabulary (`Nat`, `List`, `Finset`, …), lemma
names built from operation and property words (`add_comm`,
`mul_le_mul_left`, `length_append`), statements with notation, implicit and
instance binders, hypotheses, `∀`/`∃`/`↔`, 60-200 characters long, a
docstring on every third, structures and inductives with constructors. The
text does not elaborate (no notation is defined): it is an index workload.

Usage: scripts/gen-library.py --modules 200 --out /tmp/gen200 [--decls 12]
       [--long 3] [--seed 1] [--lean PATH] [--jobs 2] [--no-compile]
       [--flavour search]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOUNDATION = os.path.join(REPO, "tests/fixtures/basic/Fix/Basic.lean")


def layout(n, seed):
    """Modules by layer and each module's imports: a seeded DAG."""
    rng = random.Random(seed)
    depth = max(2, round(n ** 0.5))
    per_layer = [n // depth + (1 if i < n % depth else 0) for i in range(depth)]
    layers, imports = [], {}
    for layer, width in enumerate(per_layer):
        names = [f"Gen.L{layer}.M{i}" for i in range(width)]
        for name in names:
            if layer == 0:
                imports[name] = ["Fix.Basic"]
            else:
                earlier = [m for ls in layers[max(0, layer - 3):] for m in ls]
                k = min(len(earlier), rng.randint(1, 4))
                # Always one import from the layer just before: the DAG is deep.
                chosen = {rng.choice(layers[-1])} | set(rng.sample(earlier, k))
                imports[name] = sorted(chosen)
        layers.append(names)
    return layers, imports


def ident(module):
    return module.replace(".", "_")


def declarations(module, deps, count, rng):
    """`count` declarations of a module: definitions, tactic proofs, and
    theorems about imported definitions."""
    me = ident(module)
    out = []
    for j in range(count):
        kind = j % 4
        if kind == 0:
            out.append(
                f"/-- A definition of `{module}`. -/\n"
                f"def {me}_f{j} (n : N) : N := N.add n (N.succ N.zero)\n"
            )
        elif kind == 1:
            out.append(
                f"theorem {me}_zero_add{j} (n : N) : Eq (N.add N.zero n) n := by\n"
                f"  induction n with\n"
                f"  | zero => exact Eq.refl N.zero\n"
                f"  | succ m ih =>\n"
                f"    show Eq (N.succ (N.add N.zero m)) (N.succ m)\n"
                f"    exact congrArg N.succ ih\n"
            )
        elif kind == 2:
            out.append(
                f"theorem {me}_comm{j} (a b : N) : Eq (N.add a b) (N.add b a) := by\n"
                f"  cases b with\n"
                f"  | zero => exact Eq.symm (N.zero_add a)\n"
                f"  | succ k =>\n"
                f"    apply Eq.trans (congrArg N.succ (N.add_comm a k))\n"
                f"    exact Eq.symm (N.succ_add k a)\n"
            )
        else:
            gen_deps = [d for d in deps if d.startswith("Gen.")]
            if gen_deps:
                dep = rng.choice(gen_deps)
                target = f"{ident(dep)}_f0"
            else:
                target = f"{me}_f0"
            out.append(
                f"theorem {me}_uses{j} (n : N) : Eq ({target} n) (N.succ (N.add n N.zero)) := by\n"
                f"  show Eq (N.add n (N.succ N.zero)) (N.succ (N.add n N.zero))\n"
                f"  exact Eq.refl _\n"
            )
    return out


NAMESPACES = ["Nat", "Int", "List", "Finset", "Real", "Set", "Polynomial", "Matrix",
              "Function", "Order", "Group", "Ring", "Module", "Filter", "MeasureTheory"]
OPS = ["add", "mul", "sub", "div", "pow", "succ", "pred", "length", "map", "filter",
       "append", "sum", "prod", "inv", "neg", "max", "min", "gcd", "card", "image"]
PROPS = ["comm", "assoc", "zero", "one", "left", "right", "cancel", "le", "lt", "self",
         "injective", "mono", "pos", "nonneg", "eq_iff", "ne_zero", "comp", "distrib"]
TYPES = ["α", "β", "ℕ", "ℤ", "ℝ", "M", "R", "G"]
CLASSES = ["AddCommMonoid", "Ring", "Group", "LinearOrder", "Field", "Preorder", "Monoid"]
# Statement shapes (str.format: a, b operations, t a type, c a class).
STATEMENTS = [
    "{{{t} : Type*}} [{c} {t}] (x y : {t}) : {a} x y = {a} y x",
    "{{n m : ℕ}} (h : n ≤ m) : {a} n ≤ {a} m",
    "(l₁ l₂ : List {t}) : ({a} (l₁ ++ l₂)).{b} = ({a} l₁).{b} + ({a} l₂).{b}",
    "[{c} {t}] {{a b c : {t}}} (h₁ : a < b) (h₂ : 0 < c) : {a} a c < {a} b c",
    "(f : {t} → {t}) (hf : Function.Injective f) : ∀ x y, f ({a} x) = f ({a} y) ↔ {a} x = {a} y",
    "{{s : Finset {t}}} (hs : s.Nonempty) : ∃ x ∈ s, ∀ y ∈ s, {b} y ≤ {b} x",
    "(n : ℕ) : {a} (n + 1) = {a} n * (n + 1)",
    "{{x : {t}}} (hx : x ≠ 0) : {a} x⁻¹ = ({a} x)⁻¹",
    "[{c} {t}] (a b : {t}) : {a} (a * b) = {a} a * {a} b",
    "(x : {t}) : 0 ≤ {a} x * {a} x",
]


def search_declarations(module, count, rng):
    """`count` Mathlib-like declarations (see the module doc) and the
    namespace they sit in."""
    ns = rng.choice(NAMESPACES)
    out = []
    for j in range(count):
        a, b = rng.sample(OPS, 2)
        p, q = rng.sample(PROPS, 2)
        t = rng.choice(TYPES)
        c = rng.choice(CLASSES)
        name = f"{a}_{b}_{p}_{j}" if j % 3 == 0 else f"{a}_{p}_{q}_{j}" if j % 3 == 1 else f"{a}_{p}_{j}"
        doc = f"/-- The `{a}` of a `{b}` is `{p}`: a lemma of `{module}`.\n\nMore detail follows. -/\n" if j % 3 == 0 else ""
        stmt = STATEMENTS[j % len(STATEMENTS)].format(a=a, b=b, t=t, c=c)
        keyword = "lemma" if j % 5 == 4 else "theorem"
        if j % 25 == 24:
            out.append(f"{doc}structure {a.capitalize()}{p.capitalize()}{j} ({t} : Type*) where\n  val : {t}\n  prop : {b} val = val\n")
        elif j % 25 == 12:
            out.append(f"{doc}inductive {a.capitalize()}Tree{j} ({t} : Type*) where\n  | leaf : {a.capitalize()}Tree{j} {t}\n  | node (l r : {a.capitalize()}Tree{j} {t}) (x : {t}) : {a.capitalize()}Tree{j} {t}\n")
        elif j % 7 == 3:
            out.append(f"{doc}def {name} [{c} {t}] (x : {t}) (n : ℕ) : {t} :=\n  {a} x ^ n\n")
        else:
            out.append(f"{doc}@[simp]\n{keyword} {name} {stmt} := by\n  simp [{a}_def, {b}_{p}]\n")
    return ns, out


def write_library(out, n, decls, long_files, seed, flavour="compiled"):
    rng = random.Random(seed + 1)
    layers, imports = layout(n, seed)
    os.makedirs(os.path.join(out, "Fix"), exist_ok=True)
    shutil.copyfile(FOUNDATION, os.path.join(out, "Fix", "Basic.lean"))
    long_modules = set(layers[-1][:long_files])
    stats = {"modules": n + 1, "declarations": 0, "lines": 0, "bytes": 0, "layers": len(layers)}
    order = ["Fix.Basic"]
    for names in layers:
        for module in names:
            count = decls * (10 if module in long_modules else 1)
            if flavour == "search":
                ns, body = search_declarations(module, count, rng)
                ns = f"{ns}.{ident(module)}"
            else:
                ns, body = "Fix", declarations(module, imports[module], count, rng)
            text = (
                "prelude\n"
                + "".join(f"import {m}\n" for m in imports[module])
                + f"\n/-! Generated by scripts/gen-library.py (seed {seed}). -/\n\nnamespace {ns}\n\n"
                + "\n".join(body)
                + f"\nend {ns}\n"
            )
            path = os.path.join(out, *module.split(".")) + ".lean"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            stats["declarations"] += count
            stats["lines"] += text.count("\n")
            stats["bytes"] += len(text.encode())
            order.append(module)
    with open(os.path.join(out, "lakefile.toml"), "w") as f:
        f.write('name = "gen"\n\n[[lean_lib]]\nname = "Fix"\n\n[[lean_lib]]\nname = "Gen"\n')
    shutil.copyfile(os.path.join(REPO, "tests/fixtures/basic/lean-toolchain"), os.path.join(out, "lean-toolchain"))
    with open(os.path.join(out, "BUILD-MODULES"), "w") as f:
        f.write("# Generated by scripts/gen-library.py, in dependency order.\n" + "\n".join(order) + "\n")
    stats["long_modules"] = sorted(long_modules)
    stats["last_module"] = layers[-1][-1]
    return order, imports, stats


def compile_library(out, order, imports, lean, jobs):
    """Compile in dependency order, `jobs` at a time."""
    build = os.path.join(out, ".lake", "build", "lib", "lean")
    env = dict(os.environ, LEAN_PATH=build, LEAN_SRC_PATH=out)
    env.pop("LAKE", None)
    deps = {"Fix.Basic": []}
    deps.update(imports)
    done, futures = set(), {}

    def one(module):
        rel = module.replace(".", "/")
        olean = os.path.join(build, rel + ".olean")
        os.makedirs(os.path.dirname(olean), exist_ok=True)
        r = subprocess.run(
            [lean, "-o", olean, "-i", olean[: -len(".olean")] + ".ilean", rel + ".lean"],
            cwd=out, env=env, capture_output=True, text=True,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{module} failed:\n{r.stdout}{r.stderr}")
        return module

    started = time.monotonic()
    pending = list(order)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending or futures:
            for module in [m for m in pending if all(d in done for d in deps[m])][: jobs * 2]:
                pending.remove(module)
                futures[pool.submit(one, module)] = module
            finished = next(iter(f for f in futures if f.done()), None)
            if finished is None:
                time.sleep(0.01)
                continue
            done.add(finished.result())
            del futures[finished]
    return time.monotonic() - started


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modules", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--decls", type=int, default=12)
    p.add_argument("--long", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--flavour", choices=["compiled", "search"], default="compiled")
    a = p.parse_args()
    if a.flavour == "search":
        a.no_compile = True
    if not a.no_compile and not a.lean:
        sys.exit("gen-library: give --lean or set LEAN_BEAM_TEST_LEAN (scripts/install-test-lean.sh prints it)")
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    order, imports, stats = write_library(a.out, a.modules, a.decls, a.long, a.seed, a.flavour)
    if not a.no_compile:
        stats["compile_seconds"] = round(compile_library(a.out, order, imports, a.lean, a.jobs), 1)
    stats["root"] = os.path.abspath(a.out)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
