//! RDMA backend (cargo feature `rdma`): RDMA devices through libibverbs (rdma-sys).

use std::ffi::CStr;

/// The names of the RDMA devices libibverbs sees; `Err` says why none can be listed.
pub fn devices() -> Result<Vec<String>, String> {
    let mut n: i32 = 0;
    // SAFETY: ibv_get_device_list returns a NULL-terminated array (or NULL) that we free once.
    unsafe {
        let list = rdma_sys::ibv_get_device_list(&mut n);
        if list.is_null() {
            return Err(format!(
                "ibv_get_device_list failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut names = Vec::new();
        for i in 0..n.max(0) as usize {
            let dev = *list.add(i);
            if dev.is_null() {
                break;
            }
            let name = rdma_sys::ibv_get_device_name(dev);
            if !name.is_null() {
                names.push(CStr::from_ptr(name).to_string_lossy().into_owned());
            }
        }
        rdma_sys::ibv_free_device_list(list);
        Ok(names)
    }
}
