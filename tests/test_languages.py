"""Every language of the toolchain table (C, C++, Rust, Go, Java, JavaScript, PyPy) through the
`codecontests` and `program` envs and the real sandbox: the verdicts a Python program of the same
behaviour gets, a compile once per job, compile errors, limits, and hostile programs contained."""

# ruff: noqa: E501 - programs in seven languages, kept one per line or two as data

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.scoring import score_job
from evalfarm.sandbox import languages

pytestmark = pytest.mark.sandbox

LANGUAGES = ("c", "cpp", "rust", "go", "java", "nodejs", "pypy3")
COMPILED = ("c", "cpp", "rust", "go", "java")
INSTALLED = languages.installed()

# The same behaviours in each language: sum (right), difference (wrong), exit 4 when a > 3 (crash),
# spin when a > 5 (timeout).
PROGRAMS: dict[str, dict[str, str]] = {
    "c": {
        "sum": '#include <stdio.h>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a+b);}\n',
        "wrong": '#include <stdio.h>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a-b);}\n',
        "crash": '#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);if(a>3)return 4;printf("%d\\n",a+b);}\n',
        "spin": '#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);volatile int x=a;while(x>5){}'
        'printf("%d\\n",a+b);}\n',
        "syntax": "int main( {\n",
    },
    "cpp": {
        "sum": "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n",
        "wrong": "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a-b<<'\\n';}\n",
        "crash": "#include <iostream>\nint main(){int a,b;std::cin>>a>>b;if(a>3)return 4;std::cout<<a+b<<'\\n';}\n",
        "spin": "#include <iostream>\nint main(){volatile int a;int b;std::cin>>b;a=b;std::cin>>b;while(a>5){}"
        "std::cout<<a+b<<'\\n';}\n",
        "syntax": "int main( {\n",
    },
    "rust": {
        "sum": "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'println!("{}",v[0]+v[1]);}\n',
        "wrong": "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'println!("{}",v[0]-v[1]);}\n',
        "crash": "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'if v[0]>3 {std::process::exit(4);} println!("{}",v[0]+v[1]);}\n',
        "spin": "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s)"
        ".unwrap();let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();"
        'let a=v[0]; while unsafe{std::ptr::read_volatile(&a)}>5 {} println!("{}",a+v[1]);}\n',
        "syntax": "fn main( {\n",
    },
    "go": {
        "sum": 'package main\nimport "fmt"\nfunc main(){var a,b int64\nfmt.Scan(&a,&b)\nfmt.Println(a+b)}\n',
        "wrong": 'package main\nimport "fmt"\nfunc main(){var a,b int64\nfmt.Scan(&a,&b)\nfmt.Println(a-b)}\n',
        "crash": 'package main\nimport ("fmt";"os")\nfunc main(){var a,b int\nfmt.Scan(&a,&b)\nif a>3 {os.Exit(4)}\n'
        "fmt.Println(a+b)}\n",
        "spin": 'package main\nimport "fmt"\nvar sink int\nfunc main(){var a,b int\nfmt.Scan(&a,&b)\n'
        "for a>5 {sink++}\nfmt.Println(a+b)}\n",
        "syntax": "package main\nfunc main( {\n",
    },
    "java": {
        "sum": "import java.util.*;\npublic class Main{public static void main(String[] x){Scanner s=new Scanner("
        "System.in);long a=s.nextLong(),b=s.nextLong();System.out.println(a+b);}}\n",
        "wrong": "import java.util.*;\npublic class Main{public static void main(String[] x){Scanner s=new Scanner("
        "System.in);long a=s.nextLong(),b=s.nextLong();System.out.println(a-b);}}\n",
        "crash": "import java.util.*;\npublic class Sol{public static void main(String[] x){Scanner s=new Scanner("
        "System.in);int a=s.nextInt(),b=s.nextInt();if(a>3)System.exit(4);System.out.println(a+b);}}\n",
        "spin": "import java.util.*;\npublic class Main{static volatile int a;public static void main(String[] x){"
        "Scanner s=new Scanner(System.in);a=s.nextInt();int b=s.nextInt();while(a>5){}System.out.println(a+b);}}\n",
        "syntax": "public class Main { void main( {\n",
    },
    "nodejs": {
        "sum": 'const [a,b]=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(BigInt);'
        "console.log((a+b).toString());\n",
        "wrong": 'const [a,b]=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(BigInt);'
        "console.log((a-b).toString());\n",
        "crash": 'const [a,b]=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(Number);'
        "if(a>3)process.exit(4);console.log(a+b);\n",
        "spin": 'const [a,b]=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(Number);'
        "while(a>5){}console.log(a+b);\n",
        "syntax": "function main( {\n",
    },
    "pypy3": {
        "sum": "a, b = map(int, input().split())\nprint(a + b)\n",
        "wrong": "a, b = map(int, input().split())\nprint(a - b)\n",
        "crash": "a, b = map(int, input().split())\nif a > 3:\n    raise SystemExit(4)\nprint(a + b)\n",
        "spin": "a, b = map(int, input().split())\nwhile a > 5:\n    pass\nprint(a + b)\n",
        "syntax": "def main(:\n    pass\n",
    },
}
ADD = {
    "id": "add",
    "public_tests": [{"input": "1 2\n", "output": "3\n"}],
    "hidden_tests": [{"input": f"{i} {3 * i}\n", "output": f"{4 * i}\n"} for i in range(8)],
}
# statuses and rewards of the behaviours above on ADD (hidden tests 0..7, all-or-nothing)
EXPECTED = {"sum": ("ok", 1.0), "wrong": ("wrong_answer", 0.0), "crash": ("runtime_error", 0.0)}


def needs(language: str) -> Any:
    return pytest.mark.skipif(language not in INSTALLED, reason=f"no {language} toolchain on this machine")


PER_LANGUAGE = [pytest.param(language, marks=needs(language)) for language in LANGUAGES]


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    context = Context(slot=933)
    yield context
    context.close()


def contest(ctx: Context, language: str, code: str, **fields: Any) -> dict[str, Any]:
    job = {"id": "j", "env": "codecontests", "problem": ADD, "code": code, "language": language, **fields}
    return score_job(job, ctx)


def program(ctx: Context, language: str, code: str, stdin: str = "", **limits: Any) -> dict[str, Any]:
    job = {"id": "p", "env": "program", "code": code, "stdin": stdin, "language": language, "limits": limits}
    return score_job(job, ctx)


@pytest.mark.parametrize("language", PER_LANGUAGE)
@pytest.mark.parametrize("behaviour", sorted(EXPECTED))
def test_each_language_gets_the_verdict_of_the_same_python_program(
    ctx: Context, language: str, behaviour: str
) -> None:
    result = contest(ctx, language, PROGRAMS[language][behaviour])
    assert (result["status"], result["reward"]) == EXPECTED[behaviour], result
    assert result["compile"]["status"] == "ok"  # Node.js and PyPy: their syntax check


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_program_past_its_time_is_a_timeout(ctx: Context, language: str) -> None:
    result = contest(ctx, language, PROGRAMS[language]["spin"], limits={"wall_s": 2.0, "cpu_s": 1.0})
    assert (result["status"], result["reward"]) == ("timeout", 0.0), result


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_job_compiles_once_and_a_compile_error_is_a_syntax_error(ctx: Context, language: str) -> None:
    code = PROGRAMS[language]["sum"] + ("\n# once\n" if language == "pypy3" else "\n// once\n")
    first, again = contest(ctx, language, code), contest(ctx, language, code)
    assert (first["compile"]["cached"], again["compile"]["cached"]) == (False, True)
    broken = contest(ctx, language, PROGRAMS[language]["syntax"])
    assert (broken["status"], broken["reward"], broken["compile"]["status"]) == (
        "syntax_error",
        0.0,
        "syntax_error",
    )
    assert "feedback" in broken and broken["passed"] == 0


# A syntax error in a script, checked before the first test runs (as CPython's programs are) with the
# runtime's own check, its message the result's stderr: never a runtime_error of every test.
SCRIPT_SYNTAX_ERRORS = {
    "nodejs": (
        "console.log(1);\nfunction (x) {}\n",
        "SyntaxError: Function statements require a function name",
    ),
    "pypy3": ("print(1)\nprint(f'{1!z}')\n", "SyntaxError: f-string: invalid conversion character"),
}


@pytest.mark.parametrize("language", [pytest.param(name, marks=needs(name)) for name in SCRIPT_SYNTAX_ERRORS])
def test_a_scripts_syntax_error_is_found_before_its_first_test(ctx: Context, language: str) -> None:
    code, message = SCRIPT_SYNTAX_ERRORS[language]
    result = program(ctx, language, code)
    assert (result["status"], result["stdout"]) == ("syntax_error", ""), result  # nothing of it ran
    assert message in result["stderr"] and message in result["error"], result
    judged = contest(ctx, language, code)
    assert (judged["status"], judged["reward"], judged["passed"]) == ("syntax_error", 0.0, 0), judged
    assert all(test["status"] == "syntax_error" for test in judged["tests"]), judged


def test_a_completions_block_in_each_language_is_found(ctx: Context) -> None:
    for language, tag in (("c", "c"), ("rust", "rust"), ("go", "go"), ("java", "java"), ("nodejs", "js")):
        if language not in INSTALLED:
            continue
        sketch = "First a Python sketch:\n```python\nprint(0)\n```\n"
        completion = f"{sketch}Then:\n```{tag}\n{PROGRAMS[language]['sum']}```\n"
        job = {
            "id": "j",
            "env": "codecontests",
            "problem": ADD,
            "completion": completion,
            "language": language,
        }
        assert score_job(job, ctx)["status"] == "ok", language


def test_a_language_this_worker_lacks_is_an_invalid_job_naming_the_ones_it_offers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = dataclasses.replace(languages.LANGUAGES["go"], compile=(("no-such-go", "build"),))
    monkeypatch.setitem(languages.LANGUAGES, "go", missing)
    context = Context(slot=938)  # a slot learns what it offers as its server starts
    try:
        result = contest(context, "go", PROGRAMS["go"]["sum"])
    finally:
        context.close()
    assert result["status"] == "invalid_job" and result["reward"] is None
    assert result["error"].startswith("language: 'go' is not offered by this worker (it offers python, cpp")


def test_language_aliases_and_unknown_languages(ctx: Context) -> None:
    if "nodejs" in INSTALLED:
        assert program(ctx, "javascript", "console.log(6 * 7)")["stdout"] == "42\n"
    result = program(ctx, "cobol", "DISPLAY 'HI'.")
    assert result["status"] == "invalid_job" and result["error"].startswith(
        "language: 'cobol' is not a language"
    )


# --- memory: the program's memory, in every language ---------------------------------------------

MEMORY_BOMBS = {
    "c": "#include <stdlib.h>\n#include <string.h>\nint main(){for(;;){char*p=malloc(1<<24);if(!p)return 3;"
    "memset(p,1,1<<24);}}\n",
    "cpp": "#include <vector>\nint main(){std::vector<std::vector<char>> v;for(;;)v.emplace_back(1<<24,1);}\n",
    "rust": "fn main(){let mut v:Vec<Vec<u8>>=Vec::new();loop{v.push(vec![1u8;1<<24]);}}\n",
    "go": 'package main\nimport "fmt"\nfunc main(){var v [][]byte\nfor {b:=make([]byte,1<<24)\nfor i:=range b {b[i]=1}\n'
    "v=append(v,b)\nif len(v)<0 {fmt.Println(len(v))}}}\n",
    "java": "import java.util.*;\npublic class Main{public static void main(String[] x){List<byte[]> v=new ArrayList<>();"
    "for(;;){byte[] b=new byte[1<<24];Arrays.fill(b,(byte)1);v.add(b);}}}\n",
    "nodejs": "const v=[];for(;;){v.push(Buffer.alloc(1<<24,1));}\n",
    "pypy3": "v = []\nwhile True:\n    v.append(bytearray(b'\\x01') * (1 << 24))\n",
}


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_program_past_its_memory_is_a_memory_limit(ctx: Context, language: str) -> None:
    result = program(ctx, language, MEMORY_BOMBS[language], memory_mb=256, wall_s=20.0, cpu_s=10.0)
    assert result["status"] == "memory_limit", result


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_program_within_its_memory_runs(ctx: Context, language: str) -> None:
    """A runtime that reserves address space starts and allocates what the job allows."""
    allocate = {
        "c": "#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\nint main(){char*p=malloc(100<<20);"
        'memset(p,1,100<<20);printf("%d\\n",p[12345]);}\n',
        "cpp": '#include <vector>\n#include <cstdio>\nint main(){std::vector<char> v(100<<20,1);printf("%d\\n",v[12345]);}\n',
        "rust": 'fn main(){let v=vec![1u8;100<<20];println!("{}",v[12345]);}\n',
        "go": 'package main\nimport "fmt"\nfunc main(){b:=make([]byte,100<<20)\nfor i:=range b {b[i]=1}\nfmt.Println(b[12345])}\n',
        "java": "public class Main{public static void main(String[] x){byte[] b=new byte[100<<20];"
        "java.util.Arrays.fill(b,(byte)1);System.out.println(b[12345]);}}\n",
        "nodejs": "const b=Buffer.alloc(100<<20,1);console.log(b[12345]);\n",
        "pypy3": "b = bytearray(b'\\x01') * (100 << 20)\nprint(b[12345])\n",
    }
    result = program(ctx, language, allocate[language], memory_mb=256)
    assert (result["status"], result["stdout"]) == ("ok", "1\n"), result


def test_a_cpp_program_starts_threads(ctx: Context) -> None:
    """glibc sizes a thread's stack from RLIMIT_STACK: a stack limit as large as the memory limit
    would leave a second thread no room."""
    code = (
        "#include <thread>\n#include <cstdio>\nint main(){int r=0;std::thread t([&]{r+=1;});t.join();"
        'std::thread u([&]{r+=2;});std::thread w([&]{r+=0;});u.join();w.join();printf("%d\\n",r);}\n'
    )
    result = program(ctx, "cpp", code)
    assert (result["status"], result["stdout"]) == ("ok", "3\n"), result


# --- hostile programs: each prints ESCAPED only if its attempt worked ----------------------------

HOSTILE: dict[str, dict[str, str]] = {
    "network": {
        "c": "#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n#include <stdio.h>\n"
        "int main(){int s=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={0};a.sin_family=AF_INET;"
        'a.sin_port=htons(53);inet_pton(AF_INET,"1.1.1.1",&a.sin_addr);'
        'if(s>=0&&connect(s,(struct sockaddr*)&a,sizeof a)==0)puts("ESCAPED");else puts("refused");}\n',
        "rust": 'fn main(){match std::net::TcpStream::connect("1.1.1.1:53"){Ok(_)=>println!("ESCAPED"),'
        'Err(_)=>println!("refused")}}\n',
        "go": 'package main\nimport ("fmt";"net")\nfunc main(){if _,e:=net.Dial("tcp","1.1.1.1:53");e==nil'
        '{fmt.Println("ESCAPED")}else{fmt.Println("refused")}}\n',
        "java": 'public class Main{public static void main(String[] x){try{new java.net.Socket("1.1.1.1",53);'
        'System.out.println("ESCAPED");}catch(Exception e){System.out.println("refused");}}}\n',
        "nodejs": 'const s=require("net").connect(53,"1.1.1.1",()=>{console.log("ESCAPED");process.exit(0)});'
        's.on("error",()=>console.log("refused"));\n',
        "pypy3": "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('ESCAPED')\n"
        "except OSError:\n    print('refused')\n",
    },
    "write_outside": {
        "c": '#include <stdio.h>\nint main(){FILE*f=fopen("/usr/evalfarm-escaped","w");puts(f?"ESCAPED":"refused");}\n',
        "rust": 'fn main(){println!("{}",if std::fs::write("/usr/evalfarm-escaped","x").is_ok(){"ESCAPED"}'
        'else{"refused"});}\n',
        "go": 'package main\nimport ("fmt";"os")\nfunc main(){if os.WriteFile("/usr/evalfarm-escaped",[]byte("x"),0644)'
        '==nil{fmt.Println("ESCAPED")}else{fmt.Println("refused")}}\n',
        "java": "public class Main{public static void main(String[] x){try{java.nio.file.Files.writeString("
        'java.nio.file.Path.of("/usr/evalfarm-escaped"),"x");System.out.println("ESCAPED");}'
        'catch(Exception e){System.out.println("refused");}}}\n',
        "nodejs": 'try{require("fs").writeFileSync("/usr/evalfarm-escaped","x");console.log("ESCAPED")}'
        'catch(e){console.log("refused")}\n',
        "pypy3": "try:\n    open('/usr/evalfarm-escaped', 'w').write('x')\n    print('ESCAPED')\n"
        "except OSError:\n    print('refused')\n",
    },
    "read_host": {
        "c": '#include <stdio.h>\nint main(){FILE*f=fopen("/etc/shadow","r");FILE*g=fopen("/root/.bashrc","r");'
        'puts(f||g?"ESCAPED":"refused");}\n',
        "rust": 'fn main(){let a=std::fs::read("/etc/shadow").is_ok()||std::fs::read("/root/.bashrc").is_ok();'
        'println!("{}",if a{"ESCAPED"}else{"refused"});}\n',
        "go": 'package main\nimport ("fmt";"os")\nfunc main(){_,a:=os.ReadFile("/etc/shadow")\n_,b:=os.ReadFile('
        '"/root/.bashrc")\nif a==nil||b==nil{fmt.Println("ESCAPED")}else{fmt.Println("refused")}}\n',
        "java": 'public class Main{public static void main(String[] x){for(String p:new String[]{"/etc/shadow",'
        '"/root/.bashrc"}){try{java.nio.file.Files.readAllBytes(java.nio.file.Path.of(p));'
        'System.out.println("ESCAPED");return;}catch(Exception e){}}System.out.println("refused");}}\n',
        "nodejs": 'const fs=require("fs");let e=false;for(const p of ["/etc/shadow","/root/.bashrc"]){try{'
        'fs.readFileSync(p);e=true}catch(x){}}console.log(e?"ESCAPED":"refused");\n',
        "pypy3": "found = False\nfor p in ('/etc/shadow', '/root/.bashrc'):\n    try:\n        open(p).read()\n"
        "        found = True\n    except OSError:\n        pass\nprint('ESCAPED' if found else 'refused')\n",
    },
    "process_bomb": {
        "c": "#include <unistd.h>\n#include <stdio.h>\nint main(){int n=0;for(int i=0;i<100000;i++)if(fork()==0)"
        '{for(;;)pause();}else n++;printf("%d\\n",n);}\n',
        "rust": "fn main(){let mut n=0;for _ in 0..100000 {if std::thread::Builder::new().spawn(||loop{"
        'std::thread::park();}).is_ok(){n+=1;}else{break;}}println!("{}",n);}\n',
        "go": 'package main\nimport ("fmt";"os/exec")\nfunc main(){n:=0\nfor i:=0;i<10000;i++{c:=exec.Command("/bin/sh",'
        '"-c","sleep 100")\nif c.Start()!=nil{break}\nn++}\nfmt.Println(n)}\n',
        "java": "public class Main{public static void main(String[] x){int n=0;try{for(;;){Thread t=new Thread(()->{"
        "try{Thread.sleep(100000);}catch(Exception e){}});t.setDaemon(true);t.start();n++;}}catch(Throwable e){}"
        "System.out.println(n);System.exit(0);}}\n",
        "nodejs": 'const cp=require("child_process");let n=0;for(let i=0;i<10000;i++){try{cp.spawn("/bin/sh",'
        '["-c","sleep 100"]).on("error",()=>{});n++}catch(e){break}}console.log(n);process.exit(0);\n',
        "pypy3": "import os\nn = 0\nfor i in range(100000):\n    try:\n        pid = os.fork()\n    except OSError:\n"
        "        break\n    if pid == 0:\n        while True:\n            os.pause()\n    n += 1\nprint(n)\n",
    },
    "endless_output": {
        "c": '#include <stdio.h>\nint main(){for(;;)puts("spam spam spam spam spam spam spam spam");}\n',
        "rust": 'fn main(){loop{println!("spam spam spam spam spam spam spam spam");}}\n',
        "go": 'package main\nimport "fmt"\nfunc main(){for{fmt.Println("spam spam spam spam spam spam spam spam")}}\n',
        "java": 'public class Main{public static void main(String[] x){for(;;)System.out.println("spam spam spam spam");}}\n',
        "nodejs": 'const fs=require("fs"),s="spam spam spam spam\\n".repeat(1000);for(;;){fs.writeSync(1,s)}\n',  # process.stdout.write would buffer in memory
        "pypy3": "while True:\n    print('spam spam spam spam spam spam spam spam')\n",
    },
}
HOSTILE["network"]["cpp"] = HOSTILE["network"]["c"]
HOSTILE["write_outside"]["cpp"] = HOSTILE["write_outside"]["c"]
HOSTILE["read_host"]["cpp"] = HOSTILE["read_host"]["c"]
HOSTILE["process_bomb"]["cpp"] = HOSTILE["process_bomb"]["c"]
HOSTILE["endless_output"]["cpp"] = HOSTILE["endless_output"]["c"]


@pytest.mark.parametrize("language", PER_LANGUAGE)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_program_is_contained_and_the_slot_keeps_serving(
    ctx: Context, language: str, kind: str
) -> None:
    result = program(ctx, language, HOSTILE[kind][language], wall_s=5.0, cpu_s=3.0)
    assert "ESCAPED" not in result.get("stdout", ""), result
    assert result["status"] not in ("infra_error", "invalid_job", "judge_error"), result
    if kind == "endless_output":
        assert result["status"] == "output_limit", result
    assert not os.path.exists("/usr/evalfarm-escaped")
    after = program(ctx, "python", "print(6 * 7)")
    assert (after["status"], after["stdout"]) == ("ok", "42\n")


def test_a_compile_bomb_ends_at_the_compiles_limits(ctx: Context) -> None:
    for language, code in (("cpp", '#include "/dev/zero"\n'), ("c", '#include "/dev/zero"\n')):
        started = contest(ctx, language, code, limits={"compile_wall_s": 5.0, "compile_memory_mb": 512})
        assert started["status"] in ("timeout", "memory_limit", "syntax_error"), started
        assert started["reward"] == 0.0


@pytest.mark.slow
def test_every_language_through_evalfarm_score(tmp_path: Any) -> None:
    import json

    from evalfarm.workers.cli import main

    jobs = [
        {"id": f"{language}-{behaviour}", "env": "codecontests", "problem": ADD, "language": language,
         "code": PROGRAMS[language][behaviour]}
        for language in LANGUAGES if language in INSTALLED for behaviour in ("sum", "wrong")
    ]  # fmt: skip
    source, out = tmp_path / "jobs.jsonl", tmp_path / "results.jsonl"
    source.write_text("".join(json.dumps(job) + "\n" for job in jobs))
    assert main(["score", str(source), "--inline", "--workers", "1", "-o", str(out), "--no-progress"]) == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["status"], r["reward"]) for r in results] == [
        (job["id"], *EXPECTED[job["id"].rsplit("-", 1)[1]]) for job in jobs
    ]


PRINT_ENVIRONMENT = {
    "c": "#include <stdio.h>\nextern char **environ;\nint main(){for(char**e=environ;*e;e++)puts(*e);}\n",
    "cpp": "#include <cstdio>\nextern char **environ;\nint main(){for(char**e=environ;*e;e++)std::puts(*e);}\n",
    "rust": 'fn main(){for (k,v) in std::env::vars(){println!("{}={}",k,v);}}\n',
    "go": 'package main\nimport ("fmt";"os")\nfunc main(){for _,e:=range os.Environ(){fmt.Println(e)}}\n',
    "java": 'public class Main{public static void main(String[] x){System.getenv().forEach((k,v)->System.out.println(k+"="+v));}}\n',
    "nodejs": "for (const [k,v] of Object.entries(process.env)) console.log(k+'='+v);\n",
    "pypy3": "import os\nfor k, v in os.environ.items():\n    print(k + '=' + v)\n",
}


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_program_sees_none_of_the_workers_environment(
    language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALFARM_TEST_SECRET", "s3cret-of-the-worker")
    context = Context(slot=936)  # a sandbox started with the secret in its environment
    try:
        result = program(context, language, PRINT_ENVIRONMENT[language])
    finally:
        context.close()
    assert result["status"] == "ok" and "PATH=" in result["stdout"], result
    assert "s3cret" not in result["stdout"] and "EVALFARM" not in result["stdout"]


TAMPER = {
    "c": '#include <stdio.h>\n#include <fcntl.h>\nint main(){int a,b;scanf("%d %d",&a,&b);int f=open("/proc/self/exe",O_WRONLY);'
    'printf("%d\\n",a+b);if(f>=0)puts("ESCAPED");}\n',
    "rust": "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s).unwrap();"
    'let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();println!("{}",v[0]+v[1]);'
    'if std::fs::OpenOptions::new().write(true).open("/proc/self/exe").is_ok(){println!("ESCAPED");}}\n',
    "go": 'package main\nimport ("fmt";"os")\nfunc main(){var a,b int\nfmt.Scan(&a,&b)\nfmt.Println(a+b)\n'
    'if f,e:=os.OpenFile("/proc/self/exe",os.O_WRONLY,0);e==nil{f.Write([]byte("x"));fmt.Println("ESCAPED")}}\n',
    "java": "import java.util.*;\npublic class Main{public static void main(String[] x)throws Exception{Scanner s=new Scanner(System.in);"
    "long a=s.nextLong(),b=s.nextLong();System.out.println(a+b);try{java.nio.file.Files.writeString(java.nio.file.Path.of("
    '"/tmp/main.jar"),"x");}catch(Exception e){}}}\n',
}


@pytest.mark.parametrize("language", [pytest.param(name, marks=needs(name)) for name in TAMPER])
def test_a_program_cannot_change_the_build_the_next_test_runs(ctx: Context, language: str) -> None:
    """Every test of a job runs the same sealed build: what a test does to its own copy is gone."""
    result = contest(ctx, language, TAMPER[language], reward_shape="fraction_passed")
    assert (result["status"], result["reward"], result["passed"]) == ("ok", 1.0, 8), result


COMPILE_BOMBS = {
    "rust": "macro_rules! b{($($t:tt)*)=>{b!($($t)* $($t)*)}}\nfn main(){b!(x);}\n",
    "go": "package main\nvar big [1 << 34]byte\nfunc main(){big[0]=1}\n",
    # javac folds a constant string doubled 16 times (within the job's code cap)
    "java": 'public class Main{static final String s0="xxxxxxxxxxxxxxxx";'
    + "".join(f"static final String s{i + 1}=s{i}+s{i};" for i in range(16))
    + "public static void main(String[] a){System.out.println(s16.length());}}\n",
}


@pytest.mark.parametrize("language", [pytest.param(name, marks=needs(name)) for name in COMPILE_BOMBS])
def test_a_compile_bomb_in_each_language_ends_without_a_reward(ctx: Context, language: str) -> None:
    result = contest(
        ctx, language, COMPILE_BOMBS[language], limits={"compile_wall_s": 20.0, "compile_memory_mb": 1024}
    )
    assert result["reward"] == 0.0, result
    assert result["status"] not in ("infra_error", "judge_error", "invalid_job"), result
    after = program(ctx, "python", "print(6 * 7)")
    assert (after["status"], after["stdout"]) == ("ok", "42\n")


# The guessing game of tests/test_judging.py, the program in each language: the interactor holds the
# number, the program asks "? x", hears "<", ">" or "=", and answers "! x".
SEARCHES = {
    "c": '#include <stdio.h>\n#include <string.h>\nint main(){int lo=1,hi=1000;char r[8];while(1){int m=(lo+hi)/2;printf("? %d\\n",m);fflush(stdout);'
    'if(scanf("%7s",r)!=1)return 1;if(!strcmp(r,"=")){printf("! %d\\n",m);fflush(stdout);return 0;}if(!strcmp(r,"<"))lo=m+1;else hi=m-1;}}\n',
    "cpp": '#include <iostream>\n#include <string>\nint main(){int lo=1,hi=1000;std::string r;while(true){int m=(lo+hi)/2;std::cout<<"? "<<m<<std::endl;'
    'if(!(std::cin>>r))return 1;if(r=="="){std::cout<<"! "<<m<<std::endl;return 0;}if(r=="<")lo=m+1;else hi=m-1;}}\n',
    "rust": "use std::io::BufRead;\nfn main(){let stdin=std::io::stdin();let mut lines=stdin.lock().lines();let (mut lo,mut hi)=(1,1000);"
    'loop{let m=(lo+hi)/2;println!("? {}",m);let r=lines.next().unwrap().unwrap();if r=="="{println!("! {}",m);return;}'
    'if r=="<"{lo=m+1;}else{hi=m-1;}}}\n',
    "go": 'package main\nimport "fmt"\nfunc main(){lo,hi:=1,1000\nfor{m:=(lo+hi)/2\nfmt.Println("?",m)\nvar r string\nfmt.Scan(&r)\n'
    'if r=="="{fmt.Println("!",m)\nreturn}\nif r=="<"{lo=m+1}else{hi=m-1}}}\n',
    "java": "import java.util.*;\npublic class Main{public static void main(String[] a){Scanner s=new Scanner(System.in);int lo=1,hi=1000;"
    'while(true){int m=(lo+hi)/2;System.out.println("? "+m);System.out.flush();String r=s.next();'
    'if(r.equals("=")){System.out.println("! "+m);System.out.flush();return;}if(r.equals("<"))lo=m+1;else hi=m-1;}}}\n',
    "nodejs": 'const rl=require("readline").createInterface({input:process.stdin});let lo=1,hi=1000,m;'
    'function ask(){m=(lo+hi)>>1;console.log("? "+m);}'
    'rl.on("line",l=>{if(l==="="){console.log("! "+m);rl.close();return;}if(l==="<")lo=m+1;else hi=m-1;ask();});ask();\n',
    "pypy3": 'low, high = 1, 1000\nwhile True:\n    m = (low + high) // 2\n    print("?", m, flush=True)\n    r = input()\n'
    '    if r == "=":\n        print("!", m, flush=True)\n        break\n    low, high = (m + 1, high) if r == "<" else (low, m - 1)\n',
}


@pytest.mark.parametrize("language", PER_LANGUAGE)
def test_a_program_in_each_language_talks_to_an_interactor(ctx: Context, language: str) -> None:
    """A runtime's build (a Java archive, a script) runs under its runtime against an interactor too,
    not executed as if it were a binary."""
    from test_judging import GUESS, GUESS_PY

    problem = {**GUESS, "interactor": {"language": "python", "code": GUESS_PY}}
    job = {
        "id": "i",
        "env": "codecontests",
        "problem": problem,
        "code": SEARCHES[language],
        "language": language,
    }
    result = score_job(job, ctx)
    assert (result["status"], result["reward"]) == ("ok", 1.0), result
