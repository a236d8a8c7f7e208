prelude
import Demo.Base

/-! The demo file of the README: one tactic proof, one `sorry`, one error. -/

namespace Demo

/-- A tactic proof: the goal changes after `induction`. -/
theorem zero_add (n : P) : Eq (P.add P.zero n) n := by
  induction n with
  | zero => exact Eq.refl P.zero
  | succ m ih => exact congrArg P.succ ih

/-- Not proved yet. -/
theorem add_comm (a b : P) : Eq (P.add a b) (P.add b a) := sorry

/-- A type error: a proof where a number is expected. -/
def oops : P := P.add P.zero (Eq.refl P.zero)

end Demo
