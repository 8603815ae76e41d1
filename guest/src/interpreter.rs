//! The one owner of the embedded CPython: resolves its configuration, starts
//! it exactly once, loads the guest's Python runtime and runs its event loop.
//!
//! The configuration is isolated (no `PYTHON*` variables, no user site, no
//! script directory on `sys.path`), in UTF-8 mode whatever the sandbox's
//! locale, without bytecode writes (the root is read-only), and with its
//! home at the Debian prefix the stdlib lives under, so `sys.path` is right
//! wherever the guest binary itself is mounted.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::embedded::BOOT;
use crate::error::StartupError;
use crate::pymod::_codemode;

/// Where Debian's python3.11 keeps its stdlib (`<home>/lib/python3.11`), in
/// the container image and on a host whose /usr bubblewrap binds.
const PYTHON_HOME: &str = "/usr";
const STDLIB_LANDMARK: &str = "lib/python3.11/os.py";

static STARTED: AtomicBool = AtomicBool::new(false);

/// Settings fixed before the interpreter starts.
pub struct PythonConfig {
    pub home: Option<PathBuf>,
    pub program_name: Option<PathBuf>,
}

impl PythonConfig {
    /// Uses the Debian home when its stdlib is there; otherwise CPython's
    /// own search from the program's location decides.
    pub fn resolve() -> Self {
        let home = Path::new(PYTHON_HOME);
        Self {
            home: home
                .join(STDLIB_LANDMARK)
                .is_file()
                .then(|| home.to_path_buf()),
            program_name: std::env::current_exe().ok(),
        }
    }
}

/// Proof that the interpreter is running; the only way to reach it.
pub struct Interpreter {
    driver: Py<PyModule>,
}

impl Interpreter {
    /// Starts CPython with `config` and loads the guest runtime, whose
    /// `prepare(wake_fd)` sets up stdio, the event loop and the SIGINT
    /// handler. Returns the interpreter and its version ("3.11.2").
    pub fn start(config: &PythonConfig, wake_fd: i32) -> Result<(Self, String), StartupError> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(StartupError::PythonInit(
                "the interpreter was already started".into(),
            ));
        }
        pyo3::append_to_inittab!(_codemode);
        initialize(config)?;
        Python::attach(|py| {
            let (driver, version) =
                load_runtime(py, wake_fd).map_err(|e| StartupError::Bootstrap(describe(py, &e)))?;
            Ok((Self { driver }, version))
        })
    }

    /// Runs the guest's event loop. It only returns if the loop itself broke.
    pub fn run(&self) -> String {
        Python::attach(|py| match self.driver.bind(py).call_method0("run") {
            Ok(_) => "the event loop returned".to_owned(),
            Err(err) => describe(py, &err),
        })
    }
}

fn load_runtime(py: Python<'_>, wake_fd: i32) -> PyResult<(Py<PyModule>, String)> {
    let boot_code = CString::new(BOOT.text)?;
    let boot_file = CString::new(format!("<codemode>/{}", BOOT.path))?;
    let boot_name = CString::new(BOOT.name)?;
    let boot = PyModule::from_code(py, &boot_code, &boot_file, &boot_name)?;
    boot.call_method1("install", (crate::records::module_table(py)?,))?;
    let driver = py.import("_codemode_driver")?;
    let version: String = driver.call_method1("prepare", (wake_fd,))?.extract()?;
    Ok((driver.unbind(), version))
}

/// A Python exception as text with its traceback, for start-up errors.
fn describe(py: Python<'_>, err: &PyErr) -> String {
    let formatted = py.import("traceback").and_then(|tb| {
        tb.call_method1(
            "format_exception",
            (err.get_type(py), err.value(py), err.traceback(py)),
        )?
        .extract::<Vec<String>>()
    });
    match formatted {
        Ok(lines) => lines.concat(),
        Err(_) => err.to_string(),
    }
}

fn initialize(config: &PythonConfig) -> Result<(), StartupError> {
    let home = config.home.as_deref().map(path_cstring).transpose()?;
    let program = config
        .program_name
        .as_deref()
        .map(path_cstring)
        .transpose()?;
    // SAFETY: the PyPreConfig/PyConfig structs are initialized by their
    // Init functions before any field is read, strings are set through
    // PyConfig_SetBytesString, the config is cleared after use, and this runs
    // once (guarded by STARTED) on the main thread before any other Python
    // call. PyEval_SaveThread releases the GIL so `Python::attach` can take it.
    unsafe {
        let mut pre = std::mem::MaybeUninit::<ffi::PyPreConfig>::zeroed();
        ffi::PyPreConfig_InitIsolatedConfig(pre.as_mut_ptr());
        let mut pre = pre.assume_init();
        pre.utf8_mode = 1;
        check(ffi::Py_PreInitialize(&pre))?;

        let mut config = std::mem::MaybeUninit::<ffi::PyConfig>::zeroed();
        ffi::PyConfig_InitIsolatedConfig(config.as_mut_ptr());
        let mut config = config.assume_init();
        config.install_signal_handlers = 1;
        config.write_bytecode = 0;
        config.user_site_directory = 0;
        config.site_import = 1;
        let result = set_strings(&mut config, home.as_deref(), program.as_deref())
            .and_then(|()| check(ffi::Py_InitializeFromConfig(&config)));
        ffi::PyConfig_Clear(&mut config);
        result?;
        ffi::PyEval_SaveThread();
    }
    Ok(())
}

/// # Safety
/// `config` must have been initialized by `PyConfig_Init*Config`.
unsafe fn set_strings(
    config: &mut ffi::PyConfig,
    home: Option<&CStr>,
    program: Option<&CStr>,
) -> Result<(), StartupError> {
    let config_ptr: *mut ffi::PyConfig = config;
    // SAFETY: per this function's contract the config is initialized; the
    // field pointers come from that same config.
    unsafe {
        if let Some(home) = home {
            check(ffi::PyConfig_SetBytesString(
                config_ptr,
                &mut (*config_ptr).home,
                home.as_ptr(),
            ))?;
        }
        if let Some(program) = program {
            check(ffi::PyConfig_SetBytesString(
                config_ptr,
                &mut (*config_ptr).program_name,
                program.as_ptr(),
            ))?;
        }
    }
    Ok(())
}

fn check(status: ffi::PyStatus) -> Result<(), StartupError> {
    // SAFETY: PyStatus_Exception only inspects the status value.
    if unsafe { ffi::PyStatus_Exception(status) } == 0 {
        return Ok(());
    }
    let text = |ptr: *const std::ffi::c_char| {
        if ptr.is_null() {
            String::new()
        } else {
            // SAFETY: CPython's status strings are static NUL-terminated C strings.
            unsafe { CStr::from_ptr(ptr) }
                .to_string_lossy()
                .into_owned()
        }
    };
    Err(StartupError::PythonInit(format!(
        "{} (in {}, exit code {})",
        text(status.err_msg),
        text(status.func),
        status.exitcode
    )))
}

fn path_cstring(path: &Path) -> Result<CString, StartupError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| StartupError::PythonInit(format!("path {path:?} contains a NUL byte")))
}
