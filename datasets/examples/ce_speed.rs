//! Times hopbench's cross-encoder on reranking lists, for `scripts/ce_speed.py`, which runs it
//! beside `sentence_transformers.CrossEncoder.predict` on the same lists.
//!
//! usage: ce_speed --model DIR --input LISTS.json [--label L] [--repeat N]
//!
//! `LISTS.json` is `[{"query": "...", "passages": ["...", ...]}, ...]`; every list is scored
//! with one `CrossEncoder::score` call (as a reranker scores a query's candidates). One untimed
//! pass first (page faults, the allocator's first growth), then `N` timed passes over all
//! lists. Threads: `RAYON_NUM_THREADS`. Prints one JSON object: the model id, the pair count,
//! the seconds of each timed pass and the scores of the last one (list by list).

#[cfg(feature = "embed")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use hopbench_datasets::embed::CrossEncoder;

    let mut args = std::env::args().skip(1);
    let (mut model, mut input, mut label, mut repeat) = (None, None, None, 1usize);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--model" => model = Some(value()?),
            "--input" => input = Some(value()?),
            "--label" => label = Some(value()?),
            "--repeat" => repeat = value()?.parse()?,
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let model = model.ok_or("--model DIR is required")?;
    let input = input.ok_or("--input LISTS.json is required")?;
    let lists: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&input)?)?;
    let lists: Vec<(String, Vec<String>)> = lists
        .iter()
        .map(|l| {
            let query = l["query"].as_str().unwrap_or_default().to_string();
            let passages = l["passages"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .map(|s| s.as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default();
            (query, passages)
        })
        .collect();
    let ce = CrossEncoder::load(model.as_ref(), label.as_deref())?;
    let pass = || -> Result<Vec<Vec<f32>>, hopbench_datasets::Error> {
        lists
            .iter()
            .map(|(q, passages)| {
                let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
                ce.score(q, &refs)
            })
            .collect()
    };
    pass()?;
    let mut seconds = Vec::with_capacity(repeat);
    let mut scores = Vec::new();
    for _ in 0..repeat {
        let start = std::time::Instant::now();
        scores = pass()?;
        seconds.push(start.elapsed().as_secs_f64());
    }
    let out = serde_json::json!({
        "model_id": ce.model_id(),
        "threads": rayon::current_num_threads(),
        "pairs": lists.iter().map(|l| l.1.len()).sum::<usize>(),
        "seconds": seconds,
        "scores": scores,
    });
    println!("{out}");
    Ok(())
}

#[cfg(not(feature = "embed"))]
fn main() {
    eprintln!("ce_speed needs the `embed` feature (a default one)");
    std::process::exit(2);
}
