"""Builds the kernel will not execute, made by the program's own source (an ELF interpreter that is
missing, not a loader or malformed, chosen with a section attribute or inline assembly): the
program's `runtime_error`, in every language whose source can ask for one, never the farm's
`infra_error`; an interactor whose build will not execute is the judge's fault. Real compilers, the
real sandbox."""

# ruff: noqa: E501 - programs kept one per line

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_judging import GUESS, GUESS_CPP, GUESS_PY, SEARCH

from evalfarm.envs.base import Context
from evalfarm.envs.scoring import score_job
from evalfarm.sandbox import languages

pytestmark = pytest.mark.sandbox

INSTALLED = languages.installed()
ADD = {
    "id": "add",
    "hidden_tests": [{"input": f"{i} {i}\n", "output": f"{2 * i}\n"} for i in range(3)],
}
SUM_C = 'int main(){long long a,b;if(scanf("%lld %lld",&a,&b)!=2)return 1;printf("%lld\\n",a+b);}\n'


def interp(language: str, path: str) -> str:
    """A correct program whose build names `path` (a C string literal's text) as its ELF interpreter."""
    if language == "c":
        return f'#include <stdio.h>\n__attribute__((used, section(".interp"))) const char interp[] = {path};\n{SUM_C}'
    return (
        "#include <cstdio>\n"
        f'extern const char interp[];\n__attribute__((used, section(".interp"))) const char interp[] = {path};\n{SUM_C}'
    )


# (language, program, the errno the kernel refuses the build with)
BUILDS = {
    "c_missing_loader": ("c", interp("c", '"/lib/no-such-loader.so"'), "ENOENT"),
    "cpp_missing_loader": ("cpp", interp("cpp", '"/lib/no-such-loader.so"'), "ENOENT"),
    "c_interpreter_not_terminated": ("c", interp("c", "{'/','b','i','n'}"), "ENOEXEC"),
    "cpp_empty_interpreter": ("cpp", interp("cpp", '""'), "ENOEXEC"),
    "c_interpreter_is_a_directory": ("c", interp("c", '"/tmp"'), "EACCES"),
    "cpp_interpreter_is_a_script": ("cpp", interp("cpp", '"/usr/bin/ldd"'), "ELIBBAD"),
    "c_inline_assembly": (
        "c",
        '#include <stdio.h>\n__asm__(".section .interp,\\"a\\"\\n.string \\"/no/such/loader\\"\\n.previous");\n'
        + SUM_C,
        "ENOENT",
    ),
    # rustc's link drops unreferenced sections: the R flag (SHF_GNU_RETAIN) keeps this one.
    "rust_global_asm": (
        "rust",
        'std::arch::global_asm!(".section .interp,\\"aR\\"", ".string \\"/no/such/loader\\"", ".previous");\n'
        "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s).unwrap();"
        'let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();println!("{}",v[0]+v[1]);}\n',
        "ENOENT",
    ),
}


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    context = Context(slot=945)
    yield context
    after = score_job({"id": "after", "env": "program", "code": "print(6 * 7)"}, context)
    assert (after["status"], after["stdout"]) == ("ok", "42\n")
    context.close()


def contest(ctx: Context, language: str, code: str, problem: dict[str, Any] = ADD) -> dict[str, Any]:
    job = {"id": "j", "env": "codecontests", "problem": problem, "code": code, "language": language}
    return score_job(job, ctx)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_a_build_the_kernel_will_not_execute_is_the_programs_runtime_error(ctx: Context, name: str) -> None:
    language, code, refused = BUILDS[name]
    if language not in INSTALLED:
        pytest.skip(f"no {language} toolchain on this machine")
    result = contest(ctx, language, code, dict(ADD, hidden_tests=ADD["hidden_tests"][:1]))
    assert (result["status"], result["reward"], result["compile"]["status"]) == ("runtime_error", 0.0, "ok")
    assert f"the program's build cannot be executed: {refused}" in result["error"], result
    ran = score_job({"id": "p", "env": "program", "code": code, "language": language, "stdin": "1 2\n"}, ctx)
    assert ran["status"] == "runtime_error" and refused in ran["error"], ran


def test_the_same_program_without_its_interpreter_section_passes(ctx: Context) -> None:
    """The control: what fails above is the section the source asked for, nothing else."""
    for language in ("c", "cpp"):
        header = "#include <stdio.h>\n" if language == "c" else "#include <cstdio>\n"
        result = contest(ctx, language, header + SUM_C)
        assert (result["status"], result["reward"]) == ("ok", 1.0), result


def test_a_program_whose_build_will_not_execute_against_an_interactor(ctx: Context) -> None:
    problem = {**GUESS, "interactor": {"language": "python", "code": GUESS_PY}}
    result = contest(ctx, "cpp", interp("cpp", '"/lib/no-such-loader.so"'), problem)
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result
    assert "ENOENT" in result["error"]


def test_an_interactor_whose_build_will_not_execute_is_a_judge_error(ctx: Context) -> None:
    """It never ran: the judge is shown faulty without the program, which is not blamed."""
    broken = GUESS_CPP.replace(
        "#include <string>\n",
        "#include <string>\nextern const char interp[];\n"
        '__attribute__((used, section(".interp"))) const char interp[] = "/lib/no-such-loader.so";\n',
    )
    problem = {**GUESS, "interactor": {"language": "cpp", "code": broken}}
    result = contest(ctx, "python", SEARCH, problem)
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert "the interactor's build cannot be executed: ENOENT" in result["error"], result
