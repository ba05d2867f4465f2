//! Safe bindings of libunmask (include/unmask.h): RAII handles, `Result<T, Error>` with the
//! status and the library's message, and streaming through closures. Thread-safety follows
//! unmask.h: a `Model` is immutable and shareable (`Send + Sync`), an `Engine` accepts submissions
//! from any thread (`Send + Sync`), a `Request` has one owner (`Send`).
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

pub use unmask_sys as sys;

/// A failed call: the status (`sys::UNMASK_ERR_*`), its name and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub status_name: String,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn text_of(pointer: *const c_char) -> String {
    if pointer.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned()
}

fn error(status: i32, message: String) -> Error {
    Error { status, status_name: text_of(unsafe { sys::unmask_status_string(status) }), message }
}

fn check(status: i32) -> Result<()> {
    if status == sys::UNMASK_OK {
        Ok(())
    } else {
        Err(error(status, text_of(unsafe { sys::unmask_last_error() })))
    }
}

fn c_string(text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| error(sys::UNMASK_ERR_INVALID_ARGUMENT, "the text contains a NUL byte".into()))
}

// Calls `fill(buffer, capacity, &count)` until the buffer held everything (outputs such as the
// metrics may grow between calls).
fn read_ids(mut fill: impl FnMut(*mut i32, i64, *mut i64) -> i32) -> Result<Vec<i32>> {
    let mut ids = vec![0i32; 256];
    loop {
        let mut count = 0i64;
        check(fill(ids.as_mut_ptr(), ids.len() as i64, &mut count))?;
        let complete = count <= ids.len() as i64;
        ids.resize(count as usize, 0);
        if complete {
            return Ok(ids);
        }
    }
}

fn read_text(mut fill: impl FnMut(*mut c_char, i64, *mut i64) -> i32) -> Result<String> {
    let mut bytes = vec![0u8; 1024];
    loop {
        let mut length = 0i64;
        check(fill(bytes.as_mut_ptr() as *mut c_char, bytes.len() as i64, &mut length))?;
        let complete = length <= bytes.len() as i64;
        bytes.resize(length as usize, 0);
        if complete {
            return Ok(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}

/// Generation settings: `unmask_generate_params` with its defaults (see unmask.h for each field).
pub struct GenerateParams(pub sys::unmask_generate_params);

impl GenerateParams {
    /// The defaults, with `gen_length` positions and as many steps.
    pub fn new(gen_length: i64) -> Self {
        let mut params = std::mem::MaybeUninit::<sys::unmask_generate_params>::zeroed();
        unsafe { sys::unmask_generate_params_init_sized(params.as_mut_ptr(), std::mem::size_of::<sys::unmask_generate_params>()) };
        let mut params = unsafe { params.assume_init() };
        params.gen_length = gen_length;
        params.steps = gen_length;
        GenerateParams(params)
    }

    /// Sets a parameter by its name in the library's table (`"threshold"`, `"cache_mode"`) from
    /// text (`"0.9"`, `"dual"`); the library checks the name and the value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let (name, value) = (c_string(name)?, c_string(value)?);
        check(unsafe { sys::unmask_generate_params_set(&mut self.0, name.as_ptr(), value.as_ptr()) })?;
        Ok(self)
    }

    /// A parameter as text (choices by name), as `set` reads it back.
    pub fn get(&self, name: &str) -> Result<String> {
        let name = c_string(name)?;
        read_text(|text, capacity, length| unsafe {
            sys::unmask_generate_params_get(&self.0, name.as_ptr(), text, capacity, length)
        })
    }

    /// The names of every parameter `set` takes, in the struct's field order.
    pub fn names() -> Result<Vec<String>> {
        let count = unsafe { sys::unmask_generate_param_count() };
        let mut names = Vec::new();
        for index in 0..count {
            let mut info = std::mem::MaybeUninit::<sys::unmask_parameter_info>::zeroed();
            let info = unsafe {
                (*info.as_mut_ptr()).struct_size = std::mem::size_of::<sys::unmask_parameter_info>() as u32;
                check(sys::unmask_generate_param_info(index, info.as_mut_ptr()))?;
                info.assume_init()
            };
            names.push(text_of(info.name));
        }
        Ok(names)
    }
}

/// The name of a finish reason (`sys::UNMASK_FINISH_*`), e.g. "eos"; "?" for an unknown one.
pub fn finish_name(reason: i32) -> String {
    let name = unsafe { sys::unmask_enum_name(sys::UNMASK_ENUM_FINISH_REASON, reason) };
    if name.is_null() { "?".to_string() } else { text_of(name) }
}

/// A loaded model: immutable, shareable between threads.
pub struct Model {
    handle: *mut sys::unmask_model,
}

unsafe impl Send for Model {}
unsafe impl Sync for Model {}

/// What one synchronous generation produced.
#[derive(Debug, Clone)]
pub struct Generation {
    pub tokens: Vec<i32>,
    pub finish_reason: i32,
    pub steps: i64,
    pub forwards: i64,
}

impl Model {
    /// Loads a Hugging Face model directory with the default parameters.
    pub fn load(path: &str) -> Result<Model> {
        let path = c_string(path)?;
        let mut params = std::mem::MaybeUninit::<sys::unmask_model_params>::zeroed();
        check(unsafe { sys::unmask_model_params_init_sized(params.as_mut_ptr(), std::mem::size_of::<sys::unmask_model_params>()) })?;
        let mut handle = ptr::null_mut();
        check(unsafe { sys::unmask_model_load(path.as_ptr(), params.as_ptr(), &mut handle) })?;
        Ok(Model { handle })
    }

    /// (architecture, parameters, mask token id, EOS token id)
    pub fn describe(&self) -> Result<(String, u64, i32, i32)> {
        let mut info: sys::unmask_model_description = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<sys::unmask_model_description>() as u32;
        check(unsafe { sys::unmask_model_info(self.handle, &mut info) })?;
        Ok((text_of(info.architecture), info.parameters_total, info.mask_token_id, info.eos_token_id))
    }

    /// The model's tokenizer (borrowed from it).
    pub fn tokenizer(&self) -> Result<Tokenizer<'_>> {
        let mut handle = ptr::null();
        check(unsafe { sys::unmask_model_tokenizer(self.handle, &mut handle) })?;
        if handle.is_null() {
            return Err(error(sys::UNMASK_ERR_UNSUPPORTED, "the model has no tokenizer".into()));
        }
        Ok(Tokenizer { handle, _model: self })
    }

    /// Generates for one prompt of token ids, synchronously.
    pub fn generate(&self, prompt: &[i32], params: &GenerateParams) -> Result<Generation> {
        let mut tokens = vec![0i32; params.0.gen_length.max(1) as usize];
        let mut result = sys::unmask_generation {
            struct_size: std::mem::size_of::<sys::unmask_generation>() as u32,
            finish_reason: 0,
            tokens: tokens.as_mut_ptr(),
            tokens_capacity: tokens.len() as i64,
            token_count: 0,
            steps: 0,
            forwards: 0,
        };
        check(unsafe { sys::unmask_generate(self.handle, &params.0, prompt.as_ptr(), prompt.len() as i64, &mut result) })?;
        tokens.truncate(result.token_count as usize);
        Ok(Generation { tokens, finish_reason: result.finish_reason, steps: result.steps, forwards: result.forwards })
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        unsafe { sys::unmask_model_free(self.handle) };
    }
}

/// One message of a conversation, as OpenAI's chat API spells it; None is absent.
#[derive(Debug, Clone, Default)]
pub struct ChatMessage {
    pub role: String,
    pub content: Option<String>,
    /// An assistant's calls: a JSON array of OpenAI tool calls.
    pub tool_calls: Option<String>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
}

impl ChatMessage {
    pub fn new(role: &str, content: &str) -> Self {
        ChatMessage { role: role.into(), content: Some(content.into()), ..Default::default() }
    }
}

/// The C structs of a conversation and the strings they point to.
struct CMessages {
    _strings: Vec<CString>,
    tools: Option<CString>,
    messages: Vec<sys::unmask_chat_message>,
}

impl CMessages {
    fn new(messages: &[ChatMessage], tools_json: Option<&str>) -> Result<Self> {
        let mut strings = Vec::new();
        let mut out = Vec::with_capacity(messages.len());
        // A CString's buffer stays where it is when the CString moves into `strings`.
        let mut pointer = |text: Option<&String>| -> Result<*const c_char> {
            match text {
                None => Ok(ptr::null()),
                Some(text) => {
                    let s = c_string(text)?;
                    let p = s.as_ptr();
                    strings.push(s);
                    Ok(p)
                }
            }
        };
        for m in messages {
            out.push(sys::unmask_chat_message {
                struct_size: std::mem::size_of::<sys::unmask_chat_message>() as u32,
                reserved: 0,
                role: pointer(Some(&m.role))?,
                content: pointer(m.content.as_ref())?,
                tool_calls: pointer(m.tool_calls.as_ref())?,
                tool_call_id: pointer(m.tool_call_id.as_ref())?,
                name: pointer(m.name.as_ref())?,
            });
        }
        let tools = tools_json.map(c_string).transpose()?;
        Ok(CMessages { _strings: strings, tools, messages: out })
    }

    fn tools(&self) -> *const c_char {
        self.tools.as_ref().map_or(ptr::null(), |t| t.as_ptr())
    }
}

/// A model's tokenizer; lives as long as the model.
pub struct Tokenizer<'model> {
    handle: *const sys::unmask_tokenizer,
    _model: &'model Model,
}

impl Tokenizer<'_> {
    pub fn encode(&self, text: &str) -> Result<Vec<i32>> {
        read_ids(|ids, capacity, count| unsafe {
            sys::unmask_tokenize(self.handle, text.as_ptr() as *const c_char, text.len() as i64, 0, ids, capacity, count)
        })
    }

    /// A chat prompt in the tokenizer's format, ending where the assistant's answer begins.
    pub fn encode_chat(&self, user: &str) -> Result<Vec<i32>> {
        let user = c_string(user)?;
        read_ids(|ids, capacity, count| unsafe {
            sys::unmask_tokenize_chat(self.handle, ptr::null(), user.as_ptr(), ids, capacity, count)
        })
    }

    /// Whether the model has a chat template (or a chat format unmask knows).
    pub fn has_chat_format(&self) -> Result<bool> {
        let mut has = 0;
        check(unsafe { sys::unmask_tokenizer_has_chat_format(self.handle, &mut has) })?;
        Ok(has == 1)
    }

    /// The prompt text of a conversation, rendered by the model's chat template (`tools_json`: a
    /// JSON array of OpenAI tool definitions, or None).
    pub fn apply_chat_template(&self, messages: &[ChatMessage], tools_json: Option<&str>, add_generation_prompt: bool)
                               -> Result<String> {
        let c = CMessages::new(messages, tools_json)?;
        read_text(|text, capacity, length| unsafe {
            sys::unmask_apply_chat_template(self.handle, c.messages.as_ptr(), c.messages.len() as i64, c.tools(),
                                            add_generation_prompt as i32, text, capacity, length)
        })
    }

    /// The ids of apply_chat_template's text.
    pub fn encode_messages(&self, messages: &[ChatMessage], tools_json: Option<&str>, add_generation_prompt: bool)
                           -> Result<Vec<i32>> {
        let c = CMessages::new(messages, tools_json)?;
        read_ids(|ids, capacity, count| unsafe {
            sys::unmask_tokenize_messages(self.handle, c.messages.as_ptr(), c.messages.len() as i64, c.tools(),
                                          add_generation_prompt as i32, ids, capacity, count)
        })
    }

    pub fn decode(&self, ids: &[i32], skip_special_tokens: bool) -> Result<String> {
        read_text(|text, capacity, length| unsafe {
            sys::unmask_detokenize(self.handle, ids.as_ptr(), ids.len() as i64, skip_special_tokens as i32, text,
                                   capacity, length)
        })
    }
}

/// What a stream closure sees after each committed block (and step, with stream_steps).
#[derive(Debug, Clone)]
pub struct StreamEvent {
    pub is_block: bool,
    pub step: i64,
    pub completed_blocks: i64,
    pub committed: i64,
    pub tokens: Vec<i32>,
}

type StreamClosure = Box<dyn FnMut(&StreamEvent) -> bool + Send>;

unsafe extern "C" fn stream_trampoline(event: *const sys::unmask_stream_event, user_data: *mut c_void) -> i32 {
    let closure = &mut *(user_data as *mut StreamClosure);
    let e = &*event;
    let tokens = if e.tokens.is_null() { Vec::new() } else { std::slice::from_raw_parts(e.tokens, e.token_count as usize).to_vec() };
    let event = StreamEvent {
        is_block: e.kind == sys::UNMASK_STREAM_BLOCK,
        step: e.step,
        completed_blocks: e.completed_blocks,
        committed: e.committed,
        tokens,
    };
    // A panic must not unwind into C: it cancels the request instead.
    match catch_unwind(AssertUnwindSafe(|| closure(&event))) {
        Ok(true) => 0,
        _ => 1,
    }
}

/// An engine over a model: requests submitted from any thread are batched per step.
pub struct Engine<'model> {
    handle: *mut sys::unmask_engine,
    _model: &'model Model,
}

unsafe impl Send for Engine<'_> {}
unsafe impl Sync for Engine<'_> {}

impl<'model> Engine<'model> {
    pub fn new(model: &'model Model, max_concurrent_requests: i32) -> Result<Engine<'model>> {
        let mut params = std::mem::MaybeUninit::<sys::unmask_engine_params>::zeroed();
        check(unsafe { sys::unmask_engine_params_init_sized(params.as_mut_ptr(), std::mem::size_of::<sys::unmask_engine_params>()) })?;
        let mut params = unsafe { params.assume_init() };
        params.max_concurrent_requests = max_concurrent_requests;
        let mut handle = ptr::null_mut();
        check(unsafe { sys::unmask_engine_create(model.handle, &params, &mut handle) })?;
        Ok(Engine { handle, _model: model })
    }

    /// Queues a prompt; `on_event` (optional) runs on the engine's thread after each committed
    /// block and returns whether to continue (a panic cancels the request).
    pub fn submit(&self, prompt: &[i32], params: &GenerateParams,
                  on_event: Option<Box<dyn FnMut(&StreamEvent) -> bool + Send>>) -> Result<Request<'model>> {
        let mut raw = params.0;
        let mut closure: Option<Box<StreamClosure>> = on_event.map(Box::new);
        if let Some(c) = closure.as_mut() {
            raw.stream_callback = Some(stream_trampoline);
            raw.stream_user_data = &mut **c as *mut StreamClosure as *mut c_void;
        }
        let mut handle = ptr::null_mut();
        check(unsafe { sys::unmask_engine_submit(self.handle, &raw, prompt.as_ptr(), prompt.len() as i64, 0.0, &mut handle) })?;
        Ok(Request { handle, _closure: closure, _model: PhantomData })
    }

    /// (submitted, forwards in total, running now)
    pub fn stats(&self) -> Result<(u64, u64, i64)> {
        let mut stats: sys::unmask_engine_stats = unsafe { std::mem::zeroed() };
        stats.struct_size = std::mem::size_of::<sys::unmask_engine_stats>() as u32;
        check(unsafe { sys::unmask_engine_stats_get(self.handle, &mut stats) })?;
        Ok((stats.requests_submitted, stats.forwards_total, stats.requests_running))
    }
}

impl Drop for Engine<'_> {
    fn drop(&mut self) {
        unsafe { sys::unmask_engine_free(self.handle) };
    }
}

/// A submitted request. Dropping it cancels it if it still runs; its closure is freed after the
/// request (unmask_request_free promises no call once it returns). It may outlive its engine,
/// not its model (its text is decoded with the model's tokenizer).
pub struct Request<'model> {
    handle: *mut sys::unmask_request,
    _closure: Option<Box<StreamClosure>>,
    _model: PhantomData<&'model Model>,
}

unsafe impl Send for Request<'_> {}

impl Request<'_> {
    /// Waits for the outcome (forever).
    pub fn wait(&self) -> Result<()> {
        check(unsafe { sys::unmask_request_wait(self.handle, -1.0) })
    }

    pub fn cancel(&mut self) -> Result<()> {
        check(unsafe { sys::unmask_request_cancel(self.handle) })
    }

    /// The answer has ended (a stop string, say): stops the request with outcome EOS.
    pub fn stop(&mut self) -> Result<()> {
        check(unsafe { sys::unmask_request_stop(self.handle) })
    }

    /// The finish reason (`sys::UNMASK_FINISH_*`), steps and forwards once finished.
    pub fn outcome(&self) -> Result<(i32, i64, i64)> {
        let mut info: sys::unmask_request_info = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<sys::unmask_request_info>() as u32;
        check(unsafe { sys::unmask_request_info_get(self.handle, &mut info) })?;
        Ok((info.finish_reason, info.steps, info.forwards))
    }

    pub fn tokens(&self) -> Result<Vec<i32>> {
        read_ids(|ids, capacity, count| unsafe { sys::unmask_request_tokens(self.handle, ids, capacity, count) })
    }

    /// The answer as text (up to the first EOS, special tokens skipped).
    pub fn text(&self) -> Result<String> {
        read_text(|text, capacity, length| unsafe { sys::unmask_request_text(self.handle, text, capacity, length) })
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        unsafe { sys::unmask_request_free(self.handle) };
    }
}

/// The library's version string, e.g. "0.1.0 (cpu, cuda, nccl)".
pub fn version() -> String {
    text_of(unsafe { sys::unmask_version_string() })
}
