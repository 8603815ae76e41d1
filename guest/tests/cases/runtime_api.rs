//! The in-sandbox API: every mcp.runtime helper, the globals and modules,
//! tool signatures built from schemas, result decoding and show().

use codemode_proto::v1::rpc_request::Call;
use codemode_proto::v1::{
    host_message, AddServers, Detail, Init, Limits, ServerInfo, Status, ToolInfo,
};

use crate::common::*;

fn guest() -> Guest {
    Guest::started(vec![fake_server::server()])
}

#[test]
fn globals_and_modules_keep_the_reference_names() {
    let mut guest = guest();
    let out = guest.run(
        "names = ['mcp', 'runtime', 'save_tool', 'mcp_servers', 'LOADED_MCP_SERVERS', 'mcp_everything']\n\
         print([n for n in names if n not in globals()])\n\
         print(LOADED_MCP_SERVERS, mcp_servers['everything'] is mcp_everything)\n\
         import mcp.runtime as rt, mcp.servers.everything as m\n\
         print(rt is runtime, m.TOOL_MAP['get_weather']['name'], sorted(m.__all__)[:3])\n\
         from mcp.servers.everything import *\nprint(echo is mcp_everything.echo)\n\
         missing = [n for n in ['discovered_servers', 'list_servers', 'list_servers_sync', 'describe_server',\n\
           'list_loaded_server_metadata', 'list_tools', 'list_tools_sync', 'query_tool_docs', 'query_tool_docs_sync',\n\
           'search_tool_docs', 'search_tool_docs_sync', 'call_tool', 'capability_summary', 'MCPError', 'save_tool', 'show']\n\
           if not hasattr(runtime, n)]\nprint(missing)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "[]\n('everything',) True\nTrue get-weather ['add', 'denied', 'echo']\nTrue\n[]\n"
    );
}

#[test]
fn tool_functions_have_real_signatures_and_docs() {
    let mut guest = guest();
    let out = guest.run(
        "import inspect\nfor name in ('echo', 'add', 'get_weather', 'image'):\n\
         \x20   sig = inspect.signature(getattr(mcp_everything, name))\n\
         \x20   print(name, [(p.name, p.kind.name, p.default is p.empty, p.default) for p in sig.parameters.values()])\n\
         print(inspect.iscoroutinefunction(mcp_everything.echo), str(inspect.signature(mcp_everything.add)))\n\
         help(mcp_everything.get_weather)",
    );
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "echo [('message', 'KEYWORD_ONLY', True, <class 'inspect._empty'>)]"
    );
    assert_eq!(
        lines[1],
        "add [('a', 'KEYWORD_ONLY', True, <class 'inspect._empty'>), ('b', 'KEYWORD_ONLY', True, <class 'inspect._empty'>), ('round', 'KEYWORD_ONLY', False, False)]"
    );
    assert_eq!(
        lines[2],
        "get_weather [('city_name', 'KEYWORD_ONLY', True, <class 'inspect._empty'>), ('units', 'KEYWORD_ONLY', False, 'metric'), ('class_', 'KEYWORD_ONLY', False, None)]"
    );
    assert_eq!(
        lines[3],
        "image [('arguments', 'VAR_KEYWORD', True, <class 'inspect._empty'>)]"
    );
    assert_eq!(
        lines[4],
        "True (*, a: float, b: float, round: bool = False)"
    );
    let help = &out.stdout;
    assert!(help.contains("Weather for a city."), "{help}");
    assert!(
        help.contains("city_name (string, required, sent as 'city-name')"),
        "{help}"
    );
    assert!(
        help.contains("units (one of 'metric', 'imperial', optional, default 'metric')"),
        "{help}"
    );
    assert!(
        help.contains("MCP tool 'get-weather' of server 'everything'"),
        "{help}"
    );
}

#[test]
fn wrong_arguments_raise_type_error_before_any_request() {
    let mut guest = guest();
    let out = guest.run(
        "for call in (lambda: mcp_everything.echo(), lambda: mcp_everything.echo(message='x', bogus=1),\n\
         \x20            lambda: mcp_everything.echo('positional')):\n\
         \x20   try:\n        call()\n    except TypeError as e:\n        print(e)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "echo() missing 1 required keyword-only argument: 'message'\n\
         echo() got an unexpected keyword argument 'bogus'\n\
         echo() takes 0 positional arguments but 1 was given\n"
    );
    assert!(out.rpcs.is_empty(), "{:?}", out.rpcs);
}

#[test]
fn aliased_parameters_are_sent_by_real_name_and_unset_optionals_are_not_sent() {
    let mut guest = guest();
    let out = guest.run(
        "print(await mcp_everything.get_weather(city_name='Oslo'))\n\
         print(await mcp_everything.get_weather(city_name='Rome', class_=3, units='imperial'))",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "{'args': {'city-name': 'Oslo'}}\n{'args': {'city-name': 'Rome', 'units': 'imperial', 'class': 3}}\n"
    );
}

#[test]
fn results_are_decoded() {
    let mut guest = guest();
    let out = guest.run(
        "print(repr(await mcp_everything.echo(message='hi')))\n\
         print(await mcp_everything.add(a=1, b=2))\n\
         print(await mcp_everything.multi())\n\
         print(await mcp_everything.image())\n\
         raw = await runtime.call_tool('everything', 'echo', {'message': 'r'}, raw=True)\nprint(raw)\n\
         print(await mcp_everything.unlisted(x=1))",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "'Echo: hi'\n{'sum': 3.0, 'args': {'a': 1, 'b': 2}}\n['one', [2]]\n\
         [{'type': 'image', 'data': 'iVBORw0K', 'mimeType': 'image/png'}]\n\
         {'content': [{'type': 'text', 'text': 'Echo: r'}]}\ncalled unlisted with {\"x\":1}\n"
    );
}

#[test]
fn tool_errors_raise_mcp_error_with_the_raw_result() {
    let mut guest = guest();
    let out = guest.run(
        "try:\n    await mcp_everything.fail()\nexcept runtime.MCPError as e:\n    print(e.kind, str(e), e.result['isError'])",
    );
    out.assert_success();
    assert_eq!(out.stdout, "tool_error boom: it broke True\n");
}

#[test]
fn discovery_helpers() {
    let mut guest = guest();
    let out = guest.run(
        "print(runtime.discovered_servers())\nprint(runtime.discovered_servers(detailed=True))\n\
         d = runtime.describe_server('everything')\nprint(d['alias'], d['cwd'], len(d['tools']), d['tools'][0]['input_schema']['required'])\n\
         d['tools'].clear()\nprint(len(runtime.describe_server('everything')['tools']))\n\
         print([m['name'] for m in runtime.list_loaded_server_metadata()])\n\
         print([t['name'] for t in runtime.list_tools_sync('everything')][:2])\n\
         try:\n    runtime.describe_server('nope')\nexcept runtime.MCPError as e:\n    print(e.kind, e)\n\
         print('mcp_<alias>' in runtime.capability_summary())",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "('everything',)\n({'name': 'everything', 'description': 'Test server'},)\n\
         everything /srv/everything 7 ['message']\n7\n['everything']\n['echo', 'add']\n\
         not_found server 'nope' is not loaded (loaded: everything)\nTrue\n"
    );
}

#[test]
fn async_helpers_ask_the_host() {
    let mut guest = guest();
    let out = guest.run(
        "print(await runtime.list_servers())\nprint(await runtime.list_tools('everything'))\n\
         print(await mcp_everything.list_tools())\n\
         print(await runtime.query_tool_docs('everything', 'echo', detail='full'))\n\
         print(len(await runtime.query_tool_docs('everything')))\n\
         print(await runtime.search_tool_docs('echo things', limit=50))",
    );
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "('everything', 'other')");
    assert!(lines[1].contains("'name': 'echo'"), "{}", lines[1]);
    assert!(
        lines[3].starts_with("{'server': 'everything'")
            && lines[3].contains("'description': 'doc'"),
        "single doc expected: {}",
        lines[3]
    );
    assert_eq!(lines[4], "1");
    assert!(lines[5].contains("'limit': 20"), "{}", lines[5]);
    let calls: Vec<&Call> = out.rpcs.iter().filter_map(|r| r.call.as_ref()).collect();
    assert!(matches!(calls[0], Call::ListServers(_)));
    assert!(matches!(calls[1], Call::ListTools(l) if l.server == "everything"));
    assert!(
        matches!(calls[3], Call::QueryToolDocs(q) if q.tool == "echo" && q.detail == Detail::Full as i32)
    );
    assert!(
        matches!(calls[4], Call::QueryToolDocs(q) if q.tool.is_empty() && q.detail == Detail::Summary as i32)
    );
    assert!(
        matches!(calls[5], Call::SearchToolDocs(s) if s.query == "echo things" && s.limit == 20)
    );
}

#[test]
fn sync_docs_read_the_cached_metadata_and_sync_search_asks_the_host() {
    let mut guest = guest();
    let out = guest.run(
        "print(runtime.query_tool_docs_sync('everything', 'get-weather', detail='full')[0]['inputSchema']['required'])\n\
         print([d['tool'] for d in runtime.query_tool_docs_sync('everything')][:2])\n\
         print(runtime.search_tool_docs_sync('weather city', limit=50, detail='full'))",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "['city-name']\n['echo', 'add']\n\
         [{'server': 'everything', 'tool': 'echo', 'query': 'weather city', 'limit': 20, 'detail': 1}]\n"
    );
    let calls: Vec<&Call> = out.rpcs.iter().filter_map(|r| r.call.as_ref()).collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        matches!(calls[0], Call::SearchToolDocs(s) if s.query == "weather city" && s.limit == 20 && s.detail == Detail::Full as i32),
        "{calls:?}"
    );
}

#[test]
fn show_attaches_images_to_the_result() {
    let mut guest = guest();
    let out = guest.run(
        "png = b'\\x89PNG\\r\\n\\x1a\\n' + b'0' * 100\nruntime.show(png)\nruntime.show('<svg/>', mime='image/svg+xml')\n\
         try:\n    runtime.show(b'what is this')\nexcept ValueError as e:\n    print('refused:', e)",
    );
    out.assert_success();
    assert!(
        out.stdout
            .starts_with("refused: cannot tell the image type"),
        "{}",
        out.stdout
    );
    let rich = &out.finished.rich;
    assert_eq!(rich.len(), 2);
    assert_eq!(rich[0].mime_type, "image/png");
    assert_eq!(rich[0].data.len(), 108);
    assert_eq!(rich[1].mime_type, "image/svg+xml");
    // Rich outputs belong to their cell only.
    assert!(guest.run("x = 1").finished.rich.is_empty());
}

#[test]
fn show_respects_the_rich_budget() {
    let mut guest = Guest::spawn();
    guest.init(Init {
        limits: Some(Limits {
            max_rich_bytes: 1000,
            ..Limits::default()
        }),
        ..default_init()
    });
    let out = guest.run("runtime.show(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(2000))");
    assert_eq!(out.status(), Status::Error);
    assert!(
        out.finished
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("1000-byte budget"),
        "{out:#?}"
    );
}

#[test]
fn add_servers_installs_more_servers_into_the_live_session() {
    let mut guest = guest();
    guest.run("servers = mcp_servers").assert_success();
    let second = ServerInfo {
        name: "second-server".into(),
        alias: String::new(),
        description: "added later".into(),
        cwd: String::new(),
        tools: vec![ToolInfo {
            name: "ping".into(),
            alias: "ping".into(),
            description: "Pings.".into(),
            input_schema_json: "{\"type\":\"object\",\"properties\":{}}".into(),
        }],
    };
    guest.host.send(host_message::Kind::AddServers(AddServers {
        servers: vec![second],
    }));
    let out = guest.run(
        "print(LOADED_MCP_SERVERS, 'second-server' in servers)\nprint(await mcp_second_server.ping())\n\
         from mcp.servers.second_server import ping\nprint(runtime.describe_server('second_server')['cwd'])",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "('everything', 'second-server') True\ncalled ping with {}\nNone\n"
    );
}

#[test]
fn odd_schemas_still_give_callable_tools() {
    let tool = |name: &str, schema: &str| ToolInfo {
        name: name.into(),
        alias: String::new(),
        description: String::new(),
        input_schema_json: schema.into(),
    };
    let odd = ServerInfo {
        name: "Odd Server!".into(),
        alias: String::new(),
        description: String::new(),
        cwd: String::new(),
        tools: vec![
            tool("not json", "{nope"),
            tool("props-not-dict", "{\"properties\": [1, 2]}"),
            tool(
                "names",
                "{\"properties\": {\"1st\": {}, \"for\": {\"enum\": [[1], {\"a\": 2}]}, \"a b\": {\"type\": [\"string\", \"null\"]}}, \"required\": [\"1st\"]}",
            ),
            tool("class", "{\"type\": \"object\", \"properties\": {}}"),
        ],
    };
    let mut guest = Guest::started(vec![odd]);
    let out = guest.run(
        "import inspect\nprint(LOADED_MCP_SERVERS, sorted(mcp_odd_server_.__dict__.keys() - {'_mcp_name', '_mcp_alias', '_mcp_functions', '_mcp_by_name'}))\n\
         print(inspect.signature(mcp_odd_server_.not_json), inspect.signature(mcp_odd_server_.props_not_dict))\n\
         print(inspect.signature(mcp_odd_server_.names))\n\
         print(await mcp_odd_server_.names(_1st=1, for_=2, a_b='x'))\nprint(await mcp_odd_server_.class_())",
    );
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "('Odd Server!',) ['class_', 'names', 'not_json', 'props_not_dict']"
    );
    assert_eq!(lines[1], "(**arguments) (**arguments)");
    assert_eq!(lines[2], "(*, _1st, for_=None, a_b: Optional[str] = None)");
    assert_eq!(
        lines[3],
        "called names with {\"1st\":1,\"for\":2,\"a b\":\"x\"}"
    );
    assert_eq!(lines[4], "called class with {}");
}

#[test]
fn show_renders_figures_and_pil_like_images() {
    let mut guest = guest();
    let out = guest.run(
        "class Figure:\n    def savefig(self, buf, format, bbox_inches):\n        buf.write(format.encode())\n\
         class Image:\n    mode = 'RGB'\n    def save(self, buf, format):\n        buf.write(format.encode())\n\
         class Pyplot:\n    def gcf(self):\n        return Figure()\n\
         runtime.show(Figure())\nruntime.show(Figure(), mime='image/svg+xml')\nruntime.show(Image())\nruntime.show(Pyplot())\n\
         try:\n    runtime.show(3)\nexcept TypeError as e:\n    print(e)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "show() takes image bytes, a matplotlib figure or a PIL image, not int\n"
    );
    let rich: Vec<(String, String)> = out
        .finished
        .rich
        .iter()
        .map(|r| {
            (
                r.mime_type.clone(),
                String::from_utf8_lossy(&r.data).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        rich,
        vec![
            ("image/png".to_owned(), "png".to_owned()),
            ("image/svg+xml".to_owned(), "svg".to_owned()),
            ("image/png".to_owned(), "PNG".to_owned()),
            ("image/png".to_owned(), "png".to_owned()),
        ]
    );
}
