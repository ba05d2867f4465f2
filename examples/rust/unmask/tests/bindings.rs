// The safe bindings against a freshly built libunmask and the bundled model.
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

fn bundled_model() -> String {
    format!("{}/../../../models/toolcall-llada-3m", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn errors_carry_the_status_and_the_message() {
    let error = unmask::Model::load("/nonexistent/unmask-model").err().expect("loading a missing directory fails");
    assert_eq!(error.status, unmask::sys::UNMASK_ERR_IO);
    assert_eq!(error.status_name, "IO");
    assert!(error.message.contains("/nonexistent/unmask-model"));
    let model = unmask::Model::load(&bundled_model()).unwrap();
    let mut params = unmask::GenerateParams::new(128);
    params.0.block_length = 12; // a block diffusion model decodes in its own blocks (16) only
    let error = model.generate(&[1, 2, 3], &params).err().expect("a bad block length fails");
    assert_eq!(error.status, unmask::sys::UNMASK_ERR_INVALID_ARGUMENT);
    assert!(error.message.contains("block_length 12 differs from the model's diffusion block size 16"), "{}", error);
}

#[test]
fn parameters_are_set_and_read_by_their_names_and_checked_by_the_library() {
    let mut params = unmask::GenerateParams::new(48);
    params.set("threshold", "0.9").unwrap().set("cache_mode", "dual").unwrap().set("early_stop", "true").unwrap();
    assert_eq!(params.0.threshold, 0.9);
    assert_eq!(params.0.cache_mode, unmask::sys::UNMASK_CACHE_DUAL);
    assert_eq!(params.0.early_stop, 1);
    assert_eq!(params.get("cache_mode").unwrap(), "dual");
    assert_eq!(params.get("threshold").unwrap(), "0.9");
    let error = params.set("threshold", "1.5").err().expect("a threshold above 1 is refused");
    assert_eq!(error.status, unmask::sys::UNMASK_ERR_INVALID_ARGUMENT);
    assert!(error.message.contains("threshold must be in [0, 1], got 1.5"), "{}", error);
    assert_eq!(params.0.threshold, 0.9); // unchanged by the refused value
    assert!(params.set("cache_mode", "triple").is_err());
    assert!(params.set("gen_lenght", "8").is_err());
    let names = unmask::GenerateParams::names().unwrap();
    assert_eq!(names.first().map(String::as_str), Some("policy"));
    assert!(names.iter().any(|n| n == "cache_precision"));
    assert_eq!(unmask::finish_name(unmask::sys::UNMASK_FINISH_EOS), "eos");
    assert_eq!(unmask::finish_name(99), "?");
}

#[test]
fn generate_answers_a_tool_call() {
    let model = unmask::Model::load(&bundled_model()).unwrap();
    let (architecture, parameters, _, eos) = model.describe().unwrap();
    assert_eq!(architecture, "llada");
    assert_eq!(parameters, 2_756_864);
    let tokenizer = model.tokenizer().unwrap();
    let prompt = tokenizer.encode_chat("What's the weather in Lisbon on May 14?").unwrap();
    let result = model.generate(&prompt, &unmask::GenerateParams::new(128)).unwrap(); // a character a token
    assert_eq!(result.tokens.len(), 128);
    let end = result.tokens.iter().position(|&t| t == eos).unwrap();
    assert_eq!(tokenizer.decode(&result.tokens[..end], true).unwrap(),
               r#"{"name": "get_weather", "arguments": {"city": "Lisbon", "date": "2026-05-14"}}"#);
    let long = "Convert 3967 EUR to GBP. ".repeat(60); // longer than the first buffer guess
    assert_eq!(tokenizer.decode(&tokenizer.encode(&long).unwrap(), false).unwrap(), long);
}

#[test]
fn conversations_go_through_the_chat_template() {
    let model = unmask::Model::load(&bundled_model()).unwrap();
    let tokenizer = model.tokenizer().unwrap();
    assert!(tokenizer.has_chat_format().unwrap());
    let call = unmask::ChatMessage {
        role: "assistant".into(),
        tool_calls: Some(r#"[{"type": "function", "function": {"name": "set_timer", "arguments": {"minutes": 5}}}]"#.into()),
        ..Default::default()
    };
    let messages = [unmask::ChatMessage::new("user", "Set a timer for 5 minutes."), call,
                    unmask::ChatMessage::new("user", "Add 2 and 3.")];
    let text = tokenizer.apply_chat_template(&messages, None, true).unwrap();
    assert_eq!(text, r#"<|user|>Set a timer for 5 minutes.<|assistant|>{"name": "set_timer", "arguments": {"minutes": 5}}<|endoftext|><|user|>Add 2 and 3.<|assistant|>"#);
    assert_eq!(tokenizer.encode_messages(&messages, None, true).unwrap(), tokenizer.encode(&text).unwrap());
    let refused = tokenizer.apply_chat_template(&[unmask::ChatMessage::new("system", "be brief")], None, true);
    assert!(refused.unwrap_err().to_string().contains("not system"));
}

#[test]
fn an_engine_streams_blocks_to_a_closure_from_several_threads() {
    let model = unmask::Model::load(&bundled_model()).unwrap();
    let engine = unmask::Engine::new(&model, 4).unwrap();
    let tokenizer = model.tokenizer().unwrap();
    let prompts = ["Set a timer for 3 minutes for the tea.", "Convert 3967 EUR to GBP."];
    let blocks = Arc::new(AtomicI64::new(0));
    let answers: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|prompt| {
                let (engine, blocks) = (&engine, blocks.clone());
                let ids = tokenizer.encode_chat(prompt).unwrap();
                scope.spawn(move || {
                    let mut params = unmask::GenerateParams::new(128); // in the model's blocks of 16
                    params.0.threshold = 0.9;
                    params.0.cache_mode = unmask::sys::UNMASK_CACHE_DUAL;
                    let request = engine
                        .submit(&ids, &params, Some(Box::new(move |event: &unmask::StreamEvent| {
                            if event.is_block {
                                blocks.fetch_add(1, Ordering::SeqCst);
                            }
                            true
                        })))
                        .unwrap();
                    request.wait().unwrap();
                    assert_eq!(request.outcome().unwrap().0, unmask::sys::UNMASK_FINISH_EOS);
                    request.text().unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(answers[0].contains(r#""set_timer""#), "{}", answers[0]);
    assert_eq!(answers[1], r#"{"name": "convert_currency", "arguments": {"amount": 3967, "from": "EUR", "to": "GBP"}}"#);
    // One call per committed block up to the one holding EOS (then the rest are EOS): 5 and 7.
    assert_eq!(blocks.load(Ordering::SeqCst), 12);
    assert_eq!(engine.stats().unwrap().0, 2);
}

#[test]
fn a_panicking_closure_cancels_only_its_request() {
    let model = unmask::Model::load(&bundled_model()).unwrap();
    let engine = unmask::Engine::new(&model, 4).unwrap();
    let ids = model.tokenizer().unwrap().encode_chat("Convert 12 EUR to GBP.").unwrap();
    let params = unmask::GenerateParams::new(128);
    let panicking = engine.submit(&ids, &params, Some(Box::new(|_: &unmask::StreamEvent| -> bool { panic!("no") }))).unwrap();
    let calm = engine.submit(&ids, &params, None).unwrap();
    panicking.wait().unwrap();
    calm.wait().unwrap();
    assert_eq!(panicking.outcome().unwrap().0, unmask::sys::UNMASK_FINISH_CANCELLED);
    assert_eq!(calm.outcome().unwrap().0, unmask::sys::UNMASK_FINISH_EOS);
}
