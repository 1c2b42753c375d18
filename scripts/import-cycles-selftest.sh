#!/usr/bin/env bash
# The cycle gauge's own test: builds small crates in a temporary folder, each with a
# known number of file-level import cycles, runs scripts/import-cycles.sh over each and
# fails when a count or an exit status differs from what rustc's path rules say.
#
# The cases are the ways the gauge has been wrong or could be: `super::` in a file
# module (`foo/a.rs`: `super` is `foo`) and in a `mod.rs` (`foo/mod.rs`: `super` is
# the parent of `foo`), paths written inline in code rather than in a `use`, braces,
# `self` inside a group, an inline `mod` block, and test-only code (`#[cfg(test)]`),
# which is not part of the crate's graph.
#
# Usage: scripts/import-cycles-selftest.sh   (exit 1 when an expectation fails)
set -euo pipefail
cd "$(dirname "$0")/.."
GAUGE="$PWD/scripts/import-cycles.sh"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0

# put CASE FILE: writes stdin to $TMP/CASE/src/FILE.
put() {
    mkdir -p "$(dirname "$TMP/$1/src/$2")"
    cat >"$TMP/$1/src/$2"
}

# expect CASE CYCLES: the gauge must print "CYCLES import cycle(s)" and exit 1 iff CYCLES > 0.
expect() {
    local case="$1" want="$2" out rc=0
    out="$(bash "$GAUGE" "$TMP/$case/src" 2>&1)" || rc=$?
    local got want_rc=0
    got="$(sed -n 's/^\([0-9]*\) import cycle(s) between files of .*/\1/p' <<<"$out")"
    [ "$want" -gt 0 ] && want_rc=1
    if [ "$got" = "$want" ] && [ "$rc" = "$want_rc" ]; then
        echo "ok   $case: $got cycle(s), exit $rc"
    else
        echo "FAIL $case: want $want cycle(s) and exit $want_rc, got '${got:-nothing}' and exit $rc"
        sed 's/^/       /' <<<"$out"
        failures=$((failures + 1))
    fi
}

# 1. Two sibling files one level down that `use super::` each other: 1 cycle. (With
# `super` of a file module resolved against its folder's parent, as the gauge once
# did, this printed 0.)
put siblings lib.rs <<'RS'
pub mod foo;
RS
put siblings foo/mod.rs <<'RS'
pub mod a;
pub mod b;
RS
put siblings foo/a.rs <<'RS'
use super::b::B;
pub struct A(pub B);
RS
put siblings foo/b.rs <<'RS'
use super::a::A;
pub struct B;
pub fn make(a: A) -> A { a }
RS
expect siblings 1

# 2. The same pair, depending on each other only through paths written inline.
put inline lib.rs <<'RS'
pub mod deep;
RS
put inline deep/mod.rs <<'RS'
pub mod walk;
RS
put inline deep/walk/mod.rs <<'RS'
pub mod x;
pub mod y;
RS
put inline deep/walk/x.rs <<'RS'
pub fn f() -> u8 { super::y::g() + 1 }
pub fn h() -> u8 { 2 }
RS
put inline deep/walk/y.rs <<'RS'
pub fn g() -> u8 {
    // super::x::h() in a comment is no dependency, nor is "super::x::h" in a string;
    crate::deep::walk::x::h()
}
RS
expect inline 1

# 3. A mod.rs (`super` of `outer/inner/mod.rs` is `outer`) and a file module
# (`super` of `outer/sib.rs` is `outer`) that reach each other, in braces (`self` in a
# group naming the group's module): 1 cycle. An item that inner/mod.rs re-exports from
# its child (`I`) is its child's, not inner's: sib -> made is no part of the cycle.
put modrs lib.rs <<'RS'
pub mod outer;
RS
put modrs outer/mod.rs <<'RS'
pub mod inner;
pub mod sib;
RS
put modrs outer/inner/mod.rs <<'RS'
mod made;
pub use self::made::I;
use super::{self as up, sib::{S}};
pub struct J;
pub fn take(s: S) -> S { let _ = up::sib::S; s }
RS
put modrs outer/inner/made.rs <<'RS'
pub struct I;
RS
put modrs outer/sib.rs <<'RS'
pub struct S;
pub fn via(i: super::inner::I) -> super::inner::I { i }
pub fn back() -> super::inner::J { super::inner::J }
RS
expect modrs 1

# 4. Test-only imports are not dependencies: a `#[cfg(test)] mod tests { … }` block,
# a `#[cfg(test)]` use and function, and a file declared by `#[cfg(test)] mod name;`
# all reach back from b to a, which uses b: 0 cycles.
put cfgtest lib.rs <<'RS'
pub mod foo;
RS
put cfgtest foo/mod.rs <<'RS'
pub mod a;
pub mod b;
RS
put cfgtest foo/a.rs <<'RS'
use super::b::B;
pub struct A(pub B);
RS
put cfgtest foo/b.rs <<'RS'
pub struct B;

#[cfg(test)]
use super::a::A;

#[cfg(test)]
#[allow(dead_code)]
fn helper() -> A { A(B) }

#[cfg(test)]
mod tests;

#[cfg(test)]
mod inline_tests {
    use super::super::a::A;
    #[test]
    fn builds() { let _ = A(super::B); let _ = crate::foo::a::A(super::B); }
}
RS
put cfgtest foo/b/tests.rs <<'RS'
use crate::foo::a::A;
RS
expect cfgtest 0

# 5. An inline module's `super` is the file's module, not the file's parent: `c`'s
# inline `mod helpers` names `super::D` (c itself) and d names c: 0 cycles; while
# its `super::super::d` (c's sibling d, which names c) is one: 1 cycle.
put inlinemod lib.rs <<'RS'
pub mod c;
pub mod d;
RS
put inlinemod c.rs <<'RS'
pub struct D;
mod helpers {
    pub fn make() -> super::D { super::D }
}
RS
put inlinemod d.rs <<'RS'
pub fn c() -> crate::c::D { crate::c::D }
RS
expect inlinemod 0
cp -r "$TMP/inlinemod" "$TMP/inlinemod2"
put inlinemod2 c.rs <<'RS'
pub struct D;
mod helpers {
    pub fn make() -> super::D { let _ = super::super::d::c; super::D }
}
RS
expect inlinemod2 1

# 6. A crate without cycles, whose module re-exports its children (structure): 0.
put clean lib.rs <<'RS'
pub mod m;
pub use m::{Left, Right};
RS
put clean m/mod.rs <<'RS'
mod left;
mod right;
pub use left::Left;
pub use right::Right;
RS
put clean m/left.rs <<'RS'
pub struct Left;
RS
put clean m/right.rs <<'RS'
use super::Left;
pub struct Right(pub Left);
RS
expect clean 0

if [ "$failures" -gt 0 ]; then
    echo "import-cycles self-test: $failures case(s) failed"
    exit 1
fi
echo "import-cycles self-test: all cases pass"
