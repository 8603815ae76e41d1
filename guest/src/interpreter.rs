//! The one owner of the embedded CPython: resolves its configuration, starts
//! it exactly once, loads the guest's Python runtime and runs its event loop.
//!
//! The configuration is isolated (no `PYTHON*` variables, no user site, no
//! script directory on `sys.path`), in UTF-8 mode whatever the sandbox's
//! locale, and without bytecode writes (the root is read-only). The
//! standard library is frozen into the binary ([`crate::frozen`]), so the
//! interpreter reads no file to start and `sys.path` holds only the
//! image's package directory, when it has one.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::embedded::BOOT;
use crate::error::StartupError;
use crate::pymod::_codemode;

/// `sys.prefix`: where nothing is. The stdlib is frozen in and packages
/// are on an explicit path, so no directory of the machine the guest runs
/// on (natively, in tests) can add itself to `sys.path` through `site`.
const PREFIX: &CStr = c"/usr/lib/codemode";

/// Where an image built with packages (`codemode image build --variant` or
/// `--requirements`) installs them; on `sys.path` when it exists.
pub const SITE_PACKAGES: &str = "/usr/lib/codemode/site-packages";

static STARTED: AtomicBool = AtomicBool::new(false);

/// Settings fixed before the interpreter starts.
pub struct PythonConfig {
    pub program_name: Option<PathBuf>,
    /// The directories on `sys.path` (the stdlib is frozen, not on it).
    pub search_paths: Vec<PathBuf>,
}

impl PythonConfig {
    /// The image's package directory when there is one.
    pub fn resolve() -> Self {
        let site = Path::new(SITE_PACKAGES);
        Self {
            program_name: std::env::current_exe().ok(),
            search_paths: site
                .is_dir()
                .then(|| site.to_path_buf())
                .into_iter()
                .collect(),
        }
    }
}

/// Proof that the interpreter is running; the only way to reach it.
pub struct Interpreter {
    wake_fd: i32,
}

impl Interpreter {
    /// Starts CPython with `config` and runs `_codemode_start.prepare`, the
    /// little that must precede Ready. Returns the interpreter and its
    /// version ("3.13.5").
    pub fn start(config: &PythonConfig, wake_fd: i32) -> Result<(Self, String), StartupError> {
        initialize(config)?;
        Python::attach(|py| {
            let version =
                load_runtime(py).map_err(|e| StartupError::Bootstrap(describe(py, &e)))?;
            Ok((Self { wake_fd }, version))
        })
    }

    /// Loads the runtime (asyncio and the rest, after Ready, while the host
    /// prepares Init) and runs the guest's event loop. It only returns if
    /// the loop itself broke.
    pub fn run(&self) -> String {
        Python::attach(|py| {
            match py
                .import("_codemode_driver")
                .and_then(|driver| driver.call_method1("run", (self.wake_fd,)))
            {
                Ok(_) => "the event loop returned".to_owned(),
                Err(err) => describe(py, &err),
            }
        })
    }
}

/// Compiles every Python file under `dir` to bytecode that is used without
/// checking its source's mtime (an image's files never change), with this
/// guest's own CPython, so the bytecode matches the interpreter that loads it.
pub fn compile_all(dir: &Path) -> Result<(), StartupError> {
    let failed = |reason: String| StartupError::Compile {
        dir: dir.display().to_string(),
        reason,
    };
    let config = PythonConfig {
        program_name: None,
        search_paths: Vec::new(),
    };
    initialize(&config)?;
    Python::attach(|py| {
        let run = || -> PyResult<bool> {
            let mode = py
                .import("py_compile")?
                .getattr("PycInvalidationMode")?
                .getattr("UNCHECKED_HASH")?;
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("quiet", 1)?;
            kwargs.set_item("workers", 1)?;
            kwargs.set_item("invalidation_mode", mode)?;
            py.import("compileall")?
                .call_method("compile_dir", (dir,), Some(&kwargs))?
                .is_truthy()
        };
        match run() {
            Ok(true) => Ok(()),
            Ok(false) => Err(failed("some files did not compile (see above)".into())),
            Err(err) => Err(failed(describe(py, &err))),
        }
    })
}

fn load_runtime(py: Python<'_>) -> PyResult<String> {
    let boot_code = CString::new(BOOT.text)?;
    let boot_file = CString::new(format!("<codemode>/{}", BOOT.path))?;
    let boot_name = CString::new(BOOT.name)?;
    let boot = PyModule::from_code(py, &boot_code, &boot_file, &boot_name)?;
    boot.call_method1("install", (crate::records::module_table(py)?,))?;
    py.import("_codemode_start")?
        .call_method0("prepare")?
        .extract()
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

/// Starts the interpreter; the one way in, so it can run only once.
fn initialize(config: &PythonConfig) -> Result<(), StartupError> {
    if STARTED.swap(true, Ordering::SeqCst) {
        return Err(StartupError::PythonInit(
            "the interpreter was already started".into(),
        ));
    }
    pyo3::append_to_inittab!(_codemode);
    crate::frozen::install().map_err(StartupError::PythonInit)?;
    let program = config
        .program_name
        .as_deref()
        .map(path_cstring)
        .transpose()?;
    let search_paths = config
        .search_paths
        .iter()
        .map(|path| path_cstring(path))
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: the PyPreConfig/PyConfig structs are initialized by their
    // Init functions before any field is read, strings are set through
    // CPython's own setters, the config is cleared after use, and this runs
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
        // No stdlib on disk to look for, so no warning about not finding it.
        config.pathconfig_warnings = 0;
        let result = set_strings(&mut config, program.as_deref(), &search_paths)
            .and_then(|()| check(ffi::Py_InitializeFromConfig(&config)));
        ffi::PyConfig_Clear(&mut config);
        result?;
        ffi::PyEval_SaveThread();
    }
    Ok(())
}

/// # Safety
/// `config` must have been initialized by `PyConfig_Init*Config`, after
/// pre-initialization (the paths are decoded with the locale it set).
unsafe fn set_strings(
    config: &mut ffi::PyConfig,
    program: Option<&CStr>,
    search_paths: &[CString],
) -> Result<(), StartupError> {
    let config_ptr: *mut ffi::PyConfig = config;
    // SAFETY: per this function's contract the config is initialized; the
    // field pointers come from that same config. A decoded path is copied
    // by PyWideStringList_Append, then freed with the allocator that made it.
    unsafe {
        if let Some(program) = program {
            check(ffi::PyConfig_SetBytesString(
                config_ptr,
                &mut (*config_ptr).program_name,
                program.as_ptr(),
            ))?;
        }
        for field in [
            &raw mut (*config_ptr).prefix,
            &raw mut (*config_ptr).base_prefix,
            &raw mut (*config_ptr).exec_prefix,
            &raw mut (*config_ptr).base_exec_prefix,
        ] {
            check(ffi::PyConfig_SetBytesString(
                config_ptr,
                field,
                PREFIX.as_ptr(),
            ))?;
        }
        (*config_ptr).module_search_paths_set = 1;
        for path in search_paths {
            let wide = ffi::Py_DecodeLocale(path.as_ptr(), std::ptr::null_mut());
            if wide.is_null() {
                return Err(StartupError::PythonInit(format!(
                    "cannot decode the path {path:?}"
                )));
            }
            let status = ffi::PyWideStringList_Append(&mut (*config_ptr).module_search_paths, wide);
            ffi::PyMem_RawFree(wide.cast());
            check(status)?;
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
