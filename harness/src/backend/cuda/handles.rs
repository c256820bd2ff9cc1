//! Texture and surface objects on a CUDA array: what a case needs to hand a kernel the 64-bit
//! handles of ptx-interop 13.2 §1.4 (the driver fills the descriptor behind each handle). A 2-D
//! array of 32-bit unsigned words, one channel, usable as a surface; a texture object reading
//! it as integers with unnormalised coordinates and point sampling; a surface object on it.
//! Everything is released on drop, objects before the array.

use cudarc::driver::sys;

use super::{check, DriverCallError, Session};

/// A 2-D CUDA array of `u32` words (`CU_AD_FORMAT_UNSIGNED_INT32`, one channel), created with
/// `CUDA_ARRAY3D_SURFACE_LDST` so a surface object can be made on it; destroyed on drop.
#[derive(Debug)]
pub struct WordArray {
    raw: sys::CUarray,
    pub width: usize,
    pub height: usize,
}

impl WordArray {
    /// Rows of the array as a copy sees them: a 1-D array (height 0) is one row.
    fn rows(&self) -> usize {
        self.height.max(1)
    }
}

impl Drop for WordArray {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cuArray3DCreate and is destroyed once, after the objects
        // made on it (they borrow it).
        unsafe {
            sys::cuArrayDestroy(self.raw);
        }
    }
}

/// A texture object (`CUtexObject`) on a [`WordArray`]; destroyed on drop.
#[derive(Debug)]
pub struct TextureObject<'a> {
    pub handle: sys::CUtexObject,
    _array: std::marker::PhantomData<&'a WordArray>,
}

impl Drop for TextureObject<'_> {
    fn drop(&mut self) {
        // SAFETY: `handle` came from cuTexObjectCreate and is destroyed once.
        unsafe {
            sys::cuTexObjectDestroy(self.handle);
        }
    }
}

/// A surface object (`CUsurfObject`) on a [`WordArray`]; destroyed on drop.
#[derive(Debug)]
pub struct SurfaceObject<'a> {
    pub handle: sys::CUsurfObject,
    _array: std::marker::PhantomData<&'a WordArray>,
}

impl Drop for SurfaceObject<'_> {
    fn drop(&mut self) {
        // SAFETY: `handle` came from cuSurfObjectCreate and is destroyed once.
        unsafe {
            sys::cuSurfObjectDestroy(self.handle);
        }
    }
}

/// The resource description of `array` (an array resource, no flags).
fn array_resource(array: &WordArray) -> sys::CUDA_RESOURCE_DESC {
    // SAFETY: a C struct of a zero-valued enum (`CU_RESOURCE_TYPE_ARRAY`), a union of handles
    // and integers, and flags: all-zero bytes are a valid value; the array handle is then
    // written into the member the resource type selects.
    let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
    res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
    res.res.array = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: array.raw };
    res
}

impl Session {
    /// `cuArray3DCreate` (depth 0: a 2-D array; height 0 too: a 1-D array) of `width` x
    /// `height` 32-bit words, surface load/store allowed.
    pub fn word_array(&self, width: usize, height: usize) -> Result<WordArray, DriverCallError> {
        let desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: width,
            Height: height,
            Depth: 0,
            Format: sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
            NumChannels: 1,
            Flags: sys::CUDA_ARRAY3D_SURFACE_LDST,
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: `desc` and the out-pointer outlive the call; a context is current.
        check("cuArray3DCreate", unsafe {
            sys::cuArray3DCreate_v2(&mut raw, &desc)
        })?;
        Ok(WordArray { raw, width, height })
    }

    /// Copy `words` (row-major, `width * height` of them) into the array (`cuMemcpy2D`).
    pub fn write_array(&self, array: &WordArray, words: &[u32]) -> Result<(), DriverCallError> {
        if words.len() != array.width * array.rows() {
            return Err(DriverCallError {
                call: "cuMemcpy2D",
                code: sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            });
        }
        let row = array.width * 4;
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            srcHost: words.as_ptr() as *const std::ffi::c_void,
            srcDevice: 0,
            srcArray: std::ptr::null_mut(),
            srcPitch: row,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            dstHost: std::ptr::null_mut(),
            dstDevice: 0,
            dstArray: array.raw,
            dstPitch: 0,
            WidthInBytes: row,
            Height: array.rows(),
        };
        // SAFETY: `words` holds `height` rows of `row` bytes (checked above) and outlives the
        // synchronous copy.
        check("cuMemcpy2D", unsafe { sys::cuMemcpy2D_v2(&copy) })
    }

    /// Copy the whole array back, row-major (`cuMemcpy2D`).
    pub fn read_array(&self, array: &WordArray) -> Result<Vec<u32>, DriverCallError> {
        let mut words = vec![0u32; array.width * array.rows()];
        let row = array.width * 4;
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            srcHost: std::ptr::null(),
            srcDevice: 0,
            srcArray: array.raw,
            srcPitch: 0,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            dstHost: words.as_mut_ptr() as *mut std::ffi::c_void,
            dstDevice: 0,
            dstArray: std::ptr::null_mut(),
            dstPitch: row,
            WidthInBytes: row,
            Height: array.rows(),
        };
        // SAFETY: `words` has room for `height` rows of `row` bytes and outlives the
        // synchronous copy.
        check("cuMemcpy2D", unsafe { sys::cuMemcpy2D_v2(&copy) })?;
        Ok(words)
    }

    /// `cuTexObjectCreate` on `array`: integer reads (`CU_TRSF_READ_AS_INTEGER`), unnormalised
    /// coordinates, point filtering, clamped addressing.
    pub fn texture_object<'a>(
        &self,
        array: &'a WordArray,
    ) -> Result<TextureObject<'a>, DriverCallError> {
        let res = array_resource(array);
        // SAFETY: a C struct of zero-valued enums (WRAP, POINT), integers and floats: all-zero
        // bytes are a valid value; the fields that matter are set below.
        let mut tex: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        tex.addressMode = [sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP; 3];
        tex.filterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT;
        tex.flags = sys::CU_TRSF_READ_AS_INTEGER;
        let mut handle = 0;
        // SAFETY: the descriptions and the out-pointer outlive the call; no view description.
        check("cuTexObjectCreate", unsafe {
            sys::cuTexObjectCreate(&mut handle, &res, &tex, std::ptr::null())
        })?;
        Ok(TextureObject {
            handle,
            _array: std::marker::PhantomData,
        })
    }

    /// The widest 1-D CUDA array a surface object may be bound to, in elements
    /// (`CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH`).
    pub fn max_surface1d_width(&self) -> Result<usize, DriverCallError> {
        let mut v = 0;
        // SAFETY: out-pointer to a live local; a device attribute query.
        check("cuDeviceGetAttribute", unsafe {
            sys::cuDeviceGetAttribute(
                &mut v,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH,
                self.device(),
            )
        })?;
        Ok(v.max(0) as usize)
    }

    /// `cuSurfObjectCreate` on `array`.
    pub fn surface_object<'a>(
        &self,
        array: &'a WordArray,
    ) -> Result<SurfaceObject<'a>, DriverCallError> {
        let res = array_resource(array);
        let mut handle = 0;
        // SAFETY: the description and the out-pointer outlive the call.
        check("cuSurfObjectCreate", unsafe {
            sys::cuSurfObjectCreate(&mut handle, &res)
        })?;
        Ok(SurfaceObject {
            handle,
            _array: std::marker::PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a GPU: words written to the array come back, and both objects are created (their
    /// handles are non-zero). Without one the session says why, and the test names the GPU.
    #[test]
    fn array_round_trip_and_objects() {
        let opened = Session::open(0);
        crate::require!(device: opened.is_ok(), "a GPU");
        let s = opened.unwrap();
        let a = s.word_array(4, 2).unwrap();
        let words: Vec<u32> = (0..8).map(|i| 0x1000 + i).collect();
        s.write_array(&a, &words).unwrap();
        assert_eq!(s.read_array(&a).unwrap(), words);
        assert!(s.write_array(&a, &words[..3]).is_err());
        let t = s.texture_object(&a).unwrap();
        let f = s.surface_object(&a).unwrap();
        assert_ne!(t.handle, 0);
        assert_ne!(f.handle, 0);
        // A 1-D array (height 0) copies as one row and takes a surface object.
        let a1 = s.word_array(8, 0).unwrap();
        s.write_array(&a1, &words).unwrap();
        assert_eq!(s.read_array(&a1).unwrap(), words);
        assert_ne!(s.surface_object(&a1).unwrap().handle, 0);
        assert!(s.max_surface1d_width().unwrap() >= 8);
    }
}
