// The Rust bindings in use: load the bundled model (or MODEL_DIR), answer one request, then
// stream two through an engine. usage: cargo run --example tool_calls [MODEL_DIR]
fn main() -> Result<(), unmask::Error> {
    let dir = std::env::args().nth(1)
        .unwrap_or_else(|| format!("{}/../../../models/toolcall-llada-3m", env!("CARGO_MANIFEST_DIR")));
    let model = unmask::Model::load(&dir)?;
    let tokenizer = model.tokenizer()?;
    println!("unmask {}", unmask::version());

    let prompt = tokenizer.encode_chat("Book a table at Sakura for 4 at 19:30.")?;
    // 128 positions (an answer is a character a token), in the model's own blocks of 16; generation
    // ends after the block that holds EOS.
    let result = model.generate(&prompt, &unmask::GenerateParams::new(128))?;
    let (_, _, _, eos) = model.describe()?;
    let end = result.tokens.iter().position(|&t| t == eos).unwrap_or(result.tokens.len());
    println!("generate: {} ({} steps)", tokenizer.decode(&result.tokens[..end], true)?, result.steps);

    let engine = unmask::Engine::new(&model, 2)?;
    let mut params = unmask::GenerateParams::new(128);
    params.set("threshold", "0.9")?.set("cache_mode", "dual")?;
    let mut requests = Vec::new();
    for text in ["Set a timer for 12 minutes for the oven.", "Send bob@example.com a note about the budget."] {
        // One call per committed block; once the block holding EOS is committed the rest are EOS,
        // and that last call counts them all.
        let on_block = move |event: &unmask::StreamEvent| {
            if event.is_block {
                println!("  block {} of \"{}\" committed", event.completed_blocks, text);
            }
            true
        };
        requests.push((text, engine.submit(&tokenizer.encode_chat(text)?, &params, Some(Box::new(on_block)))?));
    }
    for (text, request) in &requests {
        request.wait()?;
        println!("engine: {} -> {}", text, request.text()?);
    }
    Ok(())
}
