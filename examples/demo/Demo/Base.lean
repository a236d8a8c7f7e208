prelude
/-!
# Demo.Base — foundations of the demo workspace

The test toolchain has no core library, so the demo defines its own basics.
It defines only what the elaborator and the few tactics used here need.
-/
set_option genCtorIdx false

universe u v

axiom lcErased : Type
axiom lcAny : Type
axiom lcVoid : Type

inductive PUnit : Sort (max 1 u) where
  | unit : PUnit
abbrev Unit : Type := PUnit.{1}
@[match_pattern] abbrev Unit.unit : Unit := PUnit.unit

inductive True : Prop where
  | intro : True

@[inline] def id {α : Sort u} (a : α) : α := a
@[inline] def Function.const {α : Sort u} (β : Sort v) (a : α) : β → α := fun _ => a

inductive Eq {α : Sort u} : α → α → Prop where
  | refl (a : α) : Eq a a

abbrev Eq.ndrec.{u1, u2} {α : Sort u2} {a : α} {motive : α → Sort u1}
    (m : motive a) {b : α} (h : Eq a b) : motive b :=
  h.rec m

theorem Eq.symm {α : Sort u} {a b : α} (h : Eq a b) : Eq b a := h.rec (Eq.refl a)

inductive HEq {α : Sort u} : α → {β : Sort u} → β → Prop where
  | refl (a : α) : HEq a a

theorem heq_of_eq {α : Sort u} {a b : α} (h : Eq a b) : HEq a b := h.rec (HEq.refl a)

theorem eq_of_heq {α : Sort u} {a b : α} (h : HEq a b) : Eq a b :=
  have gen : ∀ (β : Sort u) (c : β), HEq a c → (e : Eq α β) → Eq (e.rec a) c :=
    fun _ _ h e => h.rec (fun _ => Eq.refl _) e
  gen α b h (Eq.refl α)

structure PProd (α : Sort u) (β : Sort v) where
  fst : α
  snd : β

structure Prod (α : Type u) (β : Type v) where
  fst : α
  snd : β

structure And (a b : Prop) : Prop where
  intro ::
  left : a
  right : b

inductive Bool : Type where
  | false : Bool
  | true : Bool

inductive Nat : Type where
  | zero : Nat
  | succ (n : Nat) : Nat

structure String : Type where
  mk ::
  raw : Nat

inductive Lean.Name : Type where
  | anonymous : Lean.Name
  | str (pre : Lean.Name) (s : String) : Lean.Name
  | num (pre : Lean.Name) (i : Nat) : Lean.Name

class OfNat (α : Type u) (_ : Nat) where
  ofNat : α

instance instOfNatNat (n : Nat) : OfNat Nat n := ⟨n⟩

@[extern "lean_sorry", never_extract]
axiom sorryAx (α : Sort u) (synthetic : Bool) : α

class Inhabited (α : Sort u) where
  default : α

inductive Lean.ParserDescr : Type where
  | mk : Lean.ParserDescr

instance : Inhabited Lean.ParserDescr := ⟨Lean.ParserDescr.mk⟩

@[tactic_parser] opaque Lean.Parser.Tactic.exact : Lean.ParserDescr
@[tactic_parser] opaque Lean.Parser.Tactic.intro : Lean.ParserDescr
@[tactic_parser] opaque Lean.Parser.Tactic.apply : Lean.ParserDescr
@[tactic_parser] opaque Lean.Parser.Tactic.cases : Lean.ParserDescr
@[tactic_parser] opaque Lean.Parser.Tactic.induction : Lean.ParserDescr
@[tactic_parser] opaque Lean.Parser.Tactic.constructor : Lean.ParserDescr
@[tactic_parser] opaque Lean.cdot : Lean.ParserDescr

namespace Demo

/-- Peano numbers. -/
inductive P : Type where
  | zero : P
  | succ (n : P) : P

/-- Addition, by recursion on the second argument. -/
def P.add : P → P → P
  | n, P.zero => n
  | n, P.succ m => P.succ (P.add n m)

/-- Equal arguments give equal results. -/
theorem congrArg {α : Sort u} {β : Sort v} {a b : α} (f : α → β) (h : Eq a b) :
    Eq (f a) (f b) :=
  h.rec (Eq.refl (f a))

end Demo
