//! Measurements, printed with `--nocapture` (not assertions beyond sanity):
//! exec-to-Ready time and the round trip of a trivial cell on a native pipe.

use std::time::{Duration, Instant};

use codemode_proto::v1::guest_message;

use crate::common::*;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

#[test]
fn exec_to_ready_and_cell_round_trip() {
    let mut ready = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let guest = Guest::spawn();
        ready.push(started.elapsed());
        drop(guest);
    }
    let mut guest = Guest::started(vec![]);
    let first = Instant::now();
    guest.run("x = 0").assert_success();
    let first = first.elapsed();
    let mut trips = Vec::new();
    for _ in 0..300 {
        let started = Instant::now();
        let id = guest.execute("x += 1", 0);
        match guest.recv() {
            Some(guest_message::Kind::Finished(f)) => assert_eq!(f.id, id),
            other => panic!("{other:?}"),
        }
        trips.push(started.elapsed());
    }
    let mut printing = Vec::new();
    for _ in 0..100 {
        let started = Instant::now();
        guest.run("print(x)").assert_success();
        printing.push(started.elapsed());
    }
    eprintln!(
        "exec-to-Ready median {:?} (min {:?}); first cell {:?}; trivial cell round trip median {:?} (min {:?}); cell with print {:?}",
        median(ready.clone()),
        ready.iter().min().unwrap(),
        first,
        median(trips.clone()),
        trips.iter().min().unwrap(),
        median(printing),
    );
    assert!(median(trips) < Duration::from_millis(50));
}

#[test]
fn installing_many_tools() {
    use codemode_proto::v1::{Init, ServerInfo, ToolInfo};
    let servers: Vec<ServerInfo> = (0..10)
        .map(|s| ServerInfo {
            name: format!("server{s}"),
            alias: format!("server{s}"),
            tools: (0..50)
                .map(|t| ToolInfo {
                    name: format!("tool_{t}"),
                    alias: format!("tool_{t}"),
                    description: "A tool.".into(),
                    input_schema_json: r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","default":3}},"required":["a"]}"#.into(),
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    let mut guest = Guest::spawn();
    let started = Instant::now();
    guest.init(Init {
        servers,
        ..default_init()
    });
    let out = guest.run("print(len(mcp_servers), len(dir(mcp_server9)) > 50)");
    let elapsed = started.elapsed();
    assert_eq!(out.stdout, "10 True\n");
    eprintln!("Init with 10 servers x 50 tools, then a first cell: {elapsed:?}");
}
